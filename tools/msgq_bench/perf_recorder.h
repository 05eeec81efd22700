// PerfRecorder: `perf record -g` of one process for the duration of a phase,
// then a flat text report next to the data (where msgqd spends its time).
//
// Not thread-safe. Failing to start perf is not an error for the bench: the
// phase runs unprofiled and the reason is returned.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PERF_RECORDER_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PERF_RECORDER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tools/launch/child_process.h"

namespace msgq::bench {

class PerfRecorder {
 public:
  // Starts perf on `pid`, writing `prefix`.perf.data.
  static absl::StatusOr<std::unique_ptr<PerfRecorder>> Start(
      pid_t pid, const std::string& prefix);
  // Stops perf and writes `prefix`.perf.txt; returns that path.
  absl::StatusOr<std::string> Finish();

 private:
  PerfRecorder(std::unique_ptr<launch::ChildProcess> perf, std::string prefix)
      : perf_(std::move(perf)), prefix_(std::move(prefix)) {}

  std::unique_ptr<launch::ChildProcess> perf_;
  std::string prefix_;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PERF_RECORDER_H_
