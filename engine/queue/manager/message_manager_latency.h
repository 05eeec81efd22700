// StatementLatency: how long one kind of MessageManager statement took, as
// fixed buckets (for a Prometheus histogram) plus count and sum. A plain
// value: MessageManager updates it under its lock and copies it out in
// Stats; not thread-safe by itself.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_LATENCY_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_LATENCY_H_

#include <array>
#include <cstdint>

#include "absl/time/time.h"

namespace msgq {

struct StatementLatency {
  // Upper bounds in seconds; buckets[i] counts statements <= kBounds[i] and
  // above the previous bound, buckets.back() the slower ones.
  static constexpr std::array<double, 12> kBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

  void Observe(absl::Duration d) {
    const double s = absl::ToDoubleSeconds(d);
    size_t i = 0;
    while (i < kBounds.size() && s > kBounds[i]) ++i;
    ++buckets[i];
    ++count;
    sum_seconds += s;
  }

  std::array<int64_t, kBounds.size() + 1> buckets{};
  int64_t count = 0;
  double sum_seconds = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_LATENCY_H_
