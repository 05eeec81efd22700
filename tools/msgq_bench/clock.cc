#include "tools/msgq_bench/clock.h"

#include <algorithm>
#include <cmath>

namespace msgq::bench {

int64_t Quantile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

pb::Latency Summarize(std::vector<int64_t>& ns) {
  pb::Latency p;
  if (ns.empty()) return p;
  std::sort(ns.begin(), ns.end());
  double sum = 0;
  for (int64_t v : ns) sum += static_cast<double>(v);
  p.set_count(ns.size());
  p.set_mean_ms(sum / static_cast<double>(ns.size()) / 1e6);
  p.set_p50_ms(Ms(Quantile(ns, 0.50)));
  p.set_p90_ms(Ms(Quantile(ns, 0.90)));
  p.set_p99_ms(Ms(Quantile(ns, 0.99)));
  p.set_p999_ms(Ms(Quantile(ns, 0.999)));
  p.set_max_ms(Ms(ns.back()));
  return p;
}

}  // namespace msgq::bench
