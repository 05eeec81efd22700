// DueDepthSampler: each table's pending-due-now count and oldest due time
// for /metrics, measured off the scrape path.
//
// A scrape only reads the cache (Get). SampleDue() measures every table
// whose last sample is at least Options::interval old (by the injected
// clock's monotonic reading), one statement per table
// (engine/sql/due_depth_statement.h: index-only, capped), through a Reader
// (in msgqd: Engine::ReadTable, a connection of the engine's pool). Start()
// runs SampleDue() every `tick` on a thread of its own, so however often
// /metrics is scraped, each table costs at most one statement per interval.
// A failed measurement keeps the table's previous sample and is retried at
// the next interval; tables that are gone are forgotten.
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

  DueDepthSampler(Lister lister, Reader reader, Clock* clock, Options options);
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

  void Start();
  void Stop();

 private:
  struct Entry {
    absl::Time measured;  // monotonic
    std::optional<Sample> sample;
  };
  const Lister lister_;
  const Reader reader_;
  Clock* const clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;  // Stop()
  std::map<TableKey, Entry> entries_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_DUE_DEPTH_SAMPLER_H_
