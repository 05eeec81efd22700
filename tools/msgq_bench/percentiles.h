// Percentiles of a set of durations (exact: the samples are sorted).
// Thread-compatible.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PERCENTILES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PERCENTILES_H_

#include <cstdint>
#include <vector>

#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

// count, mean and percentiles in ms; all 0 when there are no samples.
using Percentiles = pb::Latency;

// Sorts `samples_ns` in place and summarises it (nearest-rank percentiles).
Percentiles Summarize(std::vector<int64_t>& samples_ns);

// The nearest-rank q-quantile (0 < q <= 1) of sorted samples, in ns.
int64_t Quantile(const std::vector<int64_t>& sorted_ns, double q);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PERCENTILES_H_
