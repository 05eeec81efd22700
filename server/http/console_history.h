// ConsoleHistory: a short history of each loaded table's counters, so the
// console's charts cover the last hour from the moment a page opens
// instead of only the minutes since.
//
// Every Options::interval (10 s) Record() takes one sample per loaded
// table: the time (MySQL's clock, Unix ns), sent and acked (counters since
// msgqd started), and the exact counts by state (ready, scheduled,
// in_flight, dead; -1 until the table's first counting read). Each table
// keeps its last Options::samples (360: an hour) in a ring; at most
// Options::max_tables tables are kept (the first ones by keyspace and
// name), and a table no longer loaded is forgotten at the next sample.
// Memory is bounded by max_tables * samples * sizeof(Sample) (about 20 MB
// at the defaults' limits; 20 kB per table).
//
// Example:
//   ConsoleHistory history([&] { return engine->ListTables(); },
//                          engine->clock(), ConsoleHistory::Options());
//   history.Start();
//   std::vector<ConsoleHistory::Sample> s = history.Get({"msgq", "jobs"});
//
// Thread-safety: thread-safe; the lister runs without the lock. The
// destructor stops the thread.
#ifndef MSGQ_SERVER_HTTP_CONSOLE_HISTORY_H_
#define MSGQ_SERVER_HTTP_CONSOLE_HISTORY_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/monotonic_cond_var.h"
#include "engine/engine.h"

namespace msgq {

class ConsoleHistory {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(10);
    size_t samples = 360;
    size_t max_tables = 1000;
  };
  struct Sample {
    int64_t time_ns = 0;
    int64_t sent = 0;
    int64_t acked = 0;
    int64_t ready = -1;
    int64_t scheduled = -1;
    int64_t in_flight = -1;
    int64_t dead = -1;
    friend bool operator==(const Sample&, const Sample&) = default;
  };
  using TableKey = std::pair<std::string, std::string>;  // keyspace, name
  using Lister = std::function<std::vector<Engine::TableInfo>()>;

  ConsoleHistory(Lister lister, Clock* clock, Options options);
  ~ConsoleHistory();
  ConsoleHistory(const ConsoleHistory&) = delete;
  ConsoleHistory& operator=(const ConsoleHistory&) = delete;

  // Takes one sample of every loaded table in `tables` at the clock's now.
  void Record(const std::vector<Engine::TableInfo>& tables)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A table's samples, oldest first; empty when none.
  std::vector<Sample> Get(const TableKey& table) const ABSL_LOCKS_EXCLUDED(mu_);
  const Options& options() const { return options_; }

  // Records at once, then every interval, until Stop().
  void Start();
  void Stop();

 private:
  const Lister lister_;
  Clock* const clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;  // Stop()
  std::map<TableKey, std::deque<Sample>> tables_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_CONSOLE_HISTORY_H_
