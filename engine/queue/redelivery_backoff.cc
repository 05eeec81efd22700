#include "engine/queue/redelivery_backoff.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace msgq {
namespace {

// Beyond ~292 years in nanoseconds int64 overflows; cap all delays at 100
// years, which is "never" for a message queue yet keeps sums safe.
constexpr double kMaxDelayNanos = 100.0 * 365 * 24 * 3600 * 1e9;

double ToNanos(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return kMaxDelayNanos;
  return std::min(absl::ToDoubleNanoseconds(d), kMaxDelayNanos);
}

}  // namespace

double SeededJitter::Next() {
  absl::MutexLock lock(&mu_);
  std::uniform_real_distribution<double> dist(kMinJitter, kMaxJitter);
  return dist(rng_);
}

int64_t RedeliveryBackoffNanos(const TableSettings& settings, int64_t epoch,
                               double jitter) {
  const double min_backoff = ToNanos(settings.min_backoff);
  const double max_backoff = ToNanos(settings.max_backoff);
  const double e = static_cast<double>(std::clamp<int64_t>(epoch, 0, 1000));
  double backoff = std::floor(min_backoff * std::exp2(e) * jitter);
  if (!std::isfinite(backoff)) backoff = kMaxDelayNanos;
  backoff =
      std::clamp(backoff, min_backoff, std::max(min_backoff, max_backoff));
  return static_cast<int64_t>(backoff);
}

int64_t PostponeDelayNanos(const TableSettings& settings, int64_t epoch,
                           double jitter) {
  return static_cast<int64_t>(ToNanos(settings.ack_wait)) +
         RedeliveryBackoffNanos(settings, epoch, jitter);
}

}  // namespace msgq
