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
// succeeds), and there is none before the first success.
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

  DueDepthSampler(Lister lister, Reader reader, Clock* clock, Options options,
                  HistoryReader history = nullptr);
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

  void Start();
  void Stop();

 private:
  // Reads the history list length if an interval passed since the last
  // attempt (`mono`: the pass's monotonic time).
  void SampleHistory(absl::Time mono) ABSL_LOCKS_EXCLUDED(mu_);

  struct Entry {
    absl::Time measured;  // monotonic
    std::optional<Sample> sample;
  };
  const Lister lister_;
  const Reader reader_;
  Clock* const clock_;
  const Options options_;
  const HistoryReader history_;

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;  // Stop()
  std::map<TableKey, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> history_measured_ ABSL_GUARDED_BY(mu_);
  std::optional<int64_t> history_length_ ABSL_GUARDED_BY(mu_);
  bool history_warned_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_DUE_DEPTH_SAMPLER_H_
