// DueDepthSampler: each table's pending-due-now count and oldest due time
// for /metrics, and the database server's InnoDB history list length (the
// purge debt that long-running transactions leave, which slows every
// queue), measured off the scrape path.
//
// A scrape only reads the cache (Get). SampleDue() measures every table
// whose last sample is at least Options::interval old (by the injected
// clock's monotonic reading), one statement per table
// (engine/sql/due_depth_statement.h: index-only, capped), through a Reader
// (in msgqd: Engine::ReadTable, a connection of the engine's pool). Start()
// runs SampleDue() every `tick` on a thread of its own, so however often
// /metrics is scraped, each table costs at most one statement per interval.
// A failed measurement keeps the table's previous sample and is retried at
// the next interval; tables that are gone are forgotten. The history list
// length is read by the same pass at most once per interval, one statement
// (kInnodbHistorySql: MariaDB's information_schema.GLOBAL_STATUS, which
// needs no privilege) through any loaded table's reader; a failed read
// keeps the previous value (and logs a warning once until a read
// succeeds), and there is none before the first success. The same pass
// reads the server's oldest open InnoDB transaction (kOldestTransactionSql:
// information_schema.INNODB_TRX, which needs the PROCESS privilege, joined
// with PROCESSLIST for its user, host, database and statement), so that an
// operator sees which connection holds purge back; a refused read keeps
// its error for the console and logs it once until a read succeeds.
//
// Thread-safety: all methods are thread-safe; no lock is held while the
// reader runs. The destructor stops the thread.
#ifndef MSGQ_SERVER_HTTP_DUE_DEPTH_SAMPLER_H_
#define MSGQ_SERVER_HTTP_DUE_DEPTH_SAMPLER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/monotonic_cond_var.h"
#include "engine/engine.h"
#include "engine/sql/due_depth_statement.h"

namespace msgq {

// The InnoDB history list length of MariaDB's status: one row, one integer.
inline constexpr char kInnodbHistorySql[] =
    "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
    "WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'";
// Its result; INTERNAL when it is not one row with one integer (a server
// without that status variable answers no row).
absl::StatusOr<int64_t> ParseInnodbHistory(const QueryResult& result);

// The server's oldest open InnoDB transaction: the one that holds purge back
// longest.
struct OldestTransaction {
  int64_t connection = 0;  // its connection id (what KILL takes)
  int64_t seconds = 0;     // open for, by the server's clock
  std::string user;        // "" when PROCESSLIST does not show it
  std::string host;
  std::string db;
  std::string statement;  // what it runs now, at most 256 characters; ""
                          // when it is idle inside its transaction
  friend bool operator==(const OldestTransaction&,
                         const OldestTransaction&) = default;
};
// Zero or one row: connection, seconds, user, host, db, statement.
inline constexpr char kOldestTransactionSql[] =
    "SELECT t.trx_mysql_thread_id, "
    "TIMESTAMPDIFF(SECOND, t.trx_started, NOW()), "
    "p.USER, p.HOST, p.DB, LEFT(p.INFO, 256) "
    "FROM information_schema.INNODB_TRX t "
    "LEFT JOIN information_schema.PROCESSLIST p "
    "ON p.ID = t.trx_mysql_thread_id "
    "ORDER BY t.trx_started, t.trx_mysql_thread_id LIMIT 1";
// Its result: nullopt when no transaction is open; INTERNAL when the row
// is not shaped as kOldestTransactionSql's.
absl::StatusOr<std::optional<OldestTransaction>> ParseOldestTransaction(
    const QueryResult& result);

class DueDepthSampler {
 public:
  struct Options {
    // A table is measured at most once per interval.
    absl::Duration interval = absl::Seconds(10);
    // How often the thread looks for tables to measure.
    absl::Duration tick = absl::Seconds(1);
    // Due rows counted at most (DueDepth::capped beyond).
    int64_t cap = 100000;
  };
  using TableKey = std::pair<std::string, std::string>;  // keyspace, name
  // The loaded tables now.
  using Lister = std::function<std::vector<TableKey>()>;
  // Measures one table at `now_ns` (Unix ns) counting up to `cap`.
  using Reader = std::function<absl::StatusOr<DueDepth>(
      const TableKey&, int64_t now_ns, int64_t cap)>;

  struct Sample {
    DueDepth depth;
    int64_t now_ns = 0;  // when measured (Unix ns, the clock's Now)
  };

  // A table's due depth: from its exact counts when the engine keeps them
  // (never capped; those tables are not measured), else the last sample.
  std::optional<Sample> For(const Engine::TableInfo& table) const;

  // Reads the server's InnoDB history list length; null: never measured.
  using HistoryReader = std::function<absl::StatusOr<int64_t>()>;
  // Reads the server's oldest open transaction; null: never read.
  using TransactionReader =
      std::function<absl::StatusOr<std::optional<OldestTransaction>>()>;
  // What the last read of the oldest transaction saw.
  struct TransactionSample {
    bool read = false;  // a read succeeded (then `error` is "")
    std::optional<OldestTransaction> oldest;  // none open when read
    std::string error;  // the last read's error, when it failed
  };

  DueDepthSampler(Lister lister, Reader reader, Clock* clock, Options options,
                  HistoryReader history = nullptr,
                  TransactionReader transaction = nullptr);
  // msgqd's: the engine's loaded tables, read with Engine::ReadTable.
  static std::unique_ptr<DueDepthSampler> ForEngine(Engine* engine,
                                                    Clock* clock,
                                                    Options options);
  ~DueDepthSampler();
  DueDepthSampler(const DueDepthSampler&) = delete;
  DueDepthSampler& operator=(const DueDepthSampler&) = delete;

  // One pass (see above); returns how many tables were measured.
  int SampleDue();
  // The latest sample of a table; nullopt before its first.
  std::optional<Sample> Get(const TableKey& table) const;
  // The latest InnoDB history list length; nullopt before the first read
  // succeeded.
  std::optional<int64_t> HistoryLength() const;
  // The latest reading of the oldest open transaction (read == false and
  // error == "" before the first attempt).
  TransactionSample OldestTransactionSample() const;

  void Start();
  void Stop();

 private:
  // Reads the history list length and the oldest transaction if an
  // interval passed since the last attempt (`mono`: the pass's monotonic
  // time).
  void SampleHistory(absl::Time mono) ABSL_LOCKS_EXCLUDED(mu_);
  void SampleTransaction() ABSL_LOCKS_EXCLUDED(mu_);

  struct Entry {
    absl::Time measured;  // monotonic
    std::optional<Sample> sample;
  };
  const Lister lister_;
  const Reader reader_;
  Clock* const clock_;
  const Options options_;
  const HistoryReader history_;
  const TransactionReader transaction_;

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;  // Stop()
  std::map<TableKey, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> history_measured_ ABSL_GUARDED_BY(mu_);
  std::optional<int64_t> history_length_ ABSL_GUARDED_BY(mu_);
  bool history_warned_ ABSL_GUARDED_BY(mu_) = false;
  TransactionSample transaction_sample_ ABSL_GUARDED_BY(mu_);
  bool transaction_warned_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_DUE_DEPTH_SAMPLER_H_
