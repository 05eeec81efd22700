// CPU time and memory of a process, read from /proc (Linux only).
//
// Thread-safe (no state). Each reader returns NOT_FOUND when the process is
// gone or /proc is unreadable.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PROC_STATS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PROC_STATS_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace msgq::bench {

struct ProcSample {
  // utime + stime of every thread, seconds.
  double cpu_s = 0;
  // Current and peak (since start or the last ResetPeakRss) resident set.
  int64_t rss_kib = 0;
  int64_t peak_rss_kib = 0;
};

absl::StatusOr<ProcSample> ReadProc(pid_t pid);

// Resets VmHWM to the current RSS (writes "5" to /proc/PID/clear_refs), so
// the next ReadProc's peak covers only what follows. FAILED_PRECONDITION
// when the kernel refuses.
absl::Status ResetPeakRss(pid_t pid);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PROC_STATS_H_
