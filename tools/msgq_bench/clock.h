// Monotonic time for the benchmark (std::chrono::steady_clock, which is
// CLOCK_MONOTONIC on Linux): every timestamp the bench compares (commit,
// receipt, phase boundaries) comes from this one clock, in the same process,
// so differences are meaningful. Thread-safe.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_
#define MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <thread>

namespace msgq::bench {

// Nanoseconds since boot; never 0.
inline int64_t NowNs() {
  return std::chrono::steady_clock::now().time_since_epoch() /
         std::chrono::nanoseconds(1);
}

// Sleeps until NowNs() >= deadline_ns (returns at once if already past).
inline void SleepUntilNs(int64_t deadline_ns) {
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(deadline_ns)));
}

inline double NsToSeconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_
