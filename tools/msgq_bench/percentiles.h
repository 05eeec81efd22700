// Percentiles of a set of durations (exact: the samples are sorted).
// A plain value type; thread-compatible.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PERCENTILES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PERCENTILES_H_

#include <cstdint>
#include <vector>

namespace msgq::bench {

struct Percentiles {
  int64_t count = 0;
  // Milliseconds; all 0 when count == 0.
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double p999_ms = 0;
  double max_ms = 0;
};

// Sorts `samples_ns` in place and summarises it (nearest-rank percentiles).
Percentiles Summarize(std::vector<int64_t>& samples_ns);

// The nearest-rank q-quantile (0 < q <= 1) of sorted samples, in ns.
int64_t Quantile(const std::vector<int64_t>& sorted_ns, double q);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PERCENTILES_H_
