// Latency samples (nanoseconds) summarised as percentiles. Pure functions,
// thread-compatible.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_LATENCY_H_
#define MSGQ_TOOLS_MSGQ_BENCH_LATENCY_H_

#include <cstdint>
#include <vector>

#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

// The nearest-rank q-quantile (0 < q <= 1) of sorted samples; 0 when empty.
int64_t Quantile(const std::vector<int64_t>& sorted, double q);

inline double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Sorts `ns` and summarises it in ms; all 0 when it is empty.
pb::Latency Summarize(std::vector<int64_t>& ns);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_LATENCY_H_
