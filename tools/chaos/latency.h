// Outcomes: what a kind of client saw, attempt by attempt (the soak's
// probes and hostile clients): how many attempts, each outcome's count
// ("ok", "ERR 1040", "UNAUTHENTICATED", "closed by server"...), and the
// latency percentiles of every attempt, failed ones included (an attempt
// that failed counts with the time its failure took).
//
// Thread-safe.
#ifndef MSGQ_TOOLS_CHAOS_LATENCY_H_
#define MSGQ_TOOLS_CHAOS_LATENCY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace msgq::chaos {

struct OutcomeSummary {
  int64_t attempts = 0;
  std::map<std::string, int64_t> outcomes;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // 0 without attempts
  // "120 x ok, 3 x ERR 1040: Too many connections"
  std::string OutcomesText() const;
};

// The `q` quantile (0..1, nearest rank) of `values`; 0 when empty.
// Reorders `values`.
double Quantile(std::vector<double>& values, double q);

class Outcomes {
 public:
  void Record(absl::Duration took, const std::string& outcome);
  OutcomeSummary Summary() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<double> ms_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> outcomes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_LATENCY_H_
