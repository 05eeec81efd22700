// Time for the benchmark. Every timestamp the bench compares (commit,
// receipt, phase boundaries) comes from one monotonic clock
// (std::chrono::steady_clock, CLOCK_MONOTONIC on Linux) in the same process,
// so differences are meaningful; latency samples (nanoseconds) are summarised
// as percentiles. Thread-safe (pure functions).
#ifndef MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_
#define MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "tools/msgq_bench/bench_results.pb.h"

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
inline double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// The nearest-rank q-quantile (0 < q <= 1) of sorted samples; 0 when empty.
int64_t Quantile(const std::vector<int64_t>& sorted, double q);

// Sorts `ns` and summarises it in ms; all 0 when it is empty.
pb::Latency Summarize(std::vector<int64_t>& ns);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_CLOCK_H_
