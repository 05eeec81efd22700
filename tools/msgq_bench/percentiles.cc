#include "tools/msgq_bench/percentiles.h"

#include <algorithm>
#include <cmath>

namespace msgq::bench {

int64_t Quantile(const std::vector<int64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0;
  size_t rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted_ns.size())));
  rank = std::clamp<size_t>(rank, 1, sorted_ns.size());
  return sorted_ns[rank - 1];
}

Percentiles Summarize(std::vector<int64_t>& samples_ns) {
  Percentiles p;
  if (samples_ns.empty()) return p;
  std::sort(samples_ns.begin(), samples_ns.end());
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  p.set_count(static_cast<int32_t>(samples_ns.size()));
  double sum = 0;
  for (int64_t v : samples_ns) sum += static_cast<double>(v);
  p.set_mean_ms(sum / static_cast<double>(samples_ns.size()) / 1e6);
  p.set_p50_ms(ms(Quantile(samples_ns, 0.50)));
  p.set_p90_ms(ms(Quantile(samples_ns, 0.90)));
  p.set_p99_ms(ms(Quantile(samples_ns, 0.99)));
  p.set_p999_ms(ms(Quantile(samples_ns, 0.999)));
  p.set_max_ms(ms(samples_ns.back()));
  return p;
}

}  // namespace msgq::bench
