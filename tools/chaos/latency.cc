#include "tools/chaos/latency.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace msgq::chaos {

std::string OutcomeSummary::OutcomesText() const {
  // Most frequent first.
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [what, n] : outcomes) sorted.emplace_back(-n, what);
  std::sort(sorted.begin(), sorted.end());
  std::string text;
  for (const auto& [n, what] : sorted) {
    absl::StrAppend(&text, text.empty() ? "" : ", ", -n, " x ", what);
  }
  return text.empty() ? "none" : text;
}

double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
  rank = std::clamp<size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

void Outcomes::Record(absl::Duration took, const std::string& outcome) {
  absl::MutexLock lock(&mu_);
  ms_.push_back(absl::ToDoubleMilliseconds(took));
  ++outcomes_[outcome];
}

OutcomeSummary Outcomes::Summary() const {
  OutcomeSummary s;
  std::vector<double> ms;
  {
    absl::MutexLock lock(&mu_);
    ms = ms_;
    s.outcomes = outcomes_;
  }
  s.attempts = static_cast<int64_t>(ms.size());
  if (!ms.empty()) {
    s.max_ms = *std::max_element(ms.begin(), ms.end());
    s.p99_ms = Quantile(ms, 0.99);
    s.p50_ms = Quantile(ms, 0.50);
  }
  return s;
}

}  // namespace msgq::chaos
