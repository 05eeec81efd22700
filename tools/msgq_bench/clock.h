// Monotonic time for the benchmark: every timestamp the bench compares
// (commit, receipt, phase boundaries) comes from this one clock, in the same
// process, so differences are meaningful. Thread-safe.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_
#define MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace msgq::bench {

// CLOCK_MONOTONIC in nanoseconds.
inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Sleeps until NowNs() >= deadline_ns (returns at once if already past).
inline void SleepUntilNs(int64_t deadline_ns) {
  timespec ts;
  ts.tv_sec = deadline_ns / 1000000000;
  ts.tv_nsec = deadline_ns % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

inline double NsToSeconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_
