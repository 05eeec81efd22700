// Producers: threads inserting into the campaign's message table in explicit
// transactions, each on its own MySQL connection, and recording every
// attempt's outcome in the Ledger. A transaction holds 1..max_rows rows
// (one multi-row INSERT); some rows get a future time_next (scheduled), some
// transactions are rolled back on purpose. Any error replaces the connection
// (reconnecting every 100 ms while MySQL is down); an error before COMMIT is
// kNotCommitted, a failed COMMIT is kUnknown.
//
// Thread-safe. Start() once, Stop() (also the destructor) joins.
#ifndef MSGQ_TOOLS_CHAOS_PRODUCERS_H_
#define MSGQ_TOOLS_CHAOS_PRODUCERS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "engine/sql/mysql_connection.h"
#include "tools/chaos/ledger.h"

namespace msgq::chaos {

class Producers {
 public:
  struct Options {
    MysqlOptions mysql;
    std::string table;  // database-qualified and quoted
    int threads = 3;
    double tx_per_second = 60;  // in total
    int max_rows = 4;
    double rollback_fraction = 0.1;
    double scheduled_fraction = 0.1;
    double max_schedule_s = 6;  // scheduled rows: now + U(0.2, max) s
    uint64_t seed = 1;
  };
  struct Stats {
    int64_t transactions = 0, commits = 0, rollbacks = 0, failed = 0,
            unknown = 0, reconnects = 0;
  };

  Producers(Options options, Ledger* ledger)
      : options_(std::move(options)), ledger_(ledger) {}
  ~Producers() { Stop(); }

  void Start();
  void Stop();
  Stats stats() const;

 private:
  void Run(int thread);

  const Options options_;
  Ledger* const ledger_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> transactions_{0}, commits_{0}, rollbacks_{0}, failed_{0},
      unknown_{0}, reconnects_{0};
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_PRODUCERS_H_
