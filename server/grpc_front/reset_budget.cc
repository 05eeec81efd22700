#include "server/grpc_front/reset_budget.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace msgq::grpc_front {

ResetBudget::ResetBudget(Options options) : options_(std::move(options)) {}

ResetBudget::Bucket& ResetBudget::Refilled(const std::string& address) {
  const absl::Time now = options_.clock->MonotonicNow();
  auto it = buckets_.find(address);
  if (it == buckets_.end()) {
    MakeRoom();
    it = buckets_
             .emplace(address,
                      Bucket{.tokens = static_cast<double>(options_.burst),
                             .updated = now})
             .first;
    return it->second;
  }
  Bucket& b = it->second;
  const double seconds = absl::ToDoubleSeconds(now - b.updated);
  if (seconds > 0) {
    b.tokens = std::min<double>(options_.burst,
                                b.tokens + seconds * options_.per_second);
    b.updated = now;
  }
  return b;
}

void ResetBudget::MakeRoom() {
  if (buckets_.size() < options_.max_addresses) return;
  const absl::Time now = options_.clock->MonotonicNow();
  // Full buckets carry nothing: forget them.
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const Bucket& b = it->second;
    const double tokens =
        b.tokens + absl::ToDoubleSeconds(now - b.updated) * options_.per_second;
    if (tokens >= options_.burst) {
      buckets_.erase(it++);
    } else {
      ++it;
    }
  }
  while (buckets_.size() >= options_.max_addresses) {
    auto oldest = buckets_.begin();
    for (auto it = buckets_.begin(); it != buckets_.end(); ++it) {
      if (it->second.updated < oldest->second.updated) oldest = it;
    }
    buckets_.erase(oldest);
  }
}

bool ResetBudget::Take(const std::string& address) {
  Bucket& b = Refilled(address);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

double ResetBudget::Tokens(const std::string& address) {
  if (!buckets_.contains(address)) return options_.burst;
  return Refilled(address).tokens;
}

}  // namespace msgq::grpc_front
