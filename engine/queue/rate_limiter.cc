#include "engine/queue/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace msgq {

RateLimiter::RateLimiter(double rate, double burst, absl::Time now)
    : rate_(rate), burst_(std::max(1.0, burst)), tokens_(burst_), last_(now) {}

void RateLimiter::Refill(absl::Time now) {
  if (now <= last_) return;
  tokens_ =
      std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * rate_);
  last_ = now;
}

size_t RateLimiter::Available(absl::Time now) {
  Refill(now);
  // A tiny epsilon absorbs rounding in the refill arithmetic.
  return static_cast<size_t>(std::floor(tokens_ + 1e-9));
}

void RateLimiter::Take(size_t n) { tokens_ -= static_cast<double>(n); }

absl::Time RateLimiter::NextToken(absl::Time now) const {
  const double tokens =
      now > last_
          ? std::min(burst_,
                     tokens_ + absl::ToDoubleSeconds(now - last_) * rate_)
          : tokens_;
  if (tokens + 1e-9 >= 1.0) return now;
  // Rounded to the nanosecond; the epsilon in Available covers the rest.
  return now + absl::Nanoseconds(std::llround((1.0 - tokens) / rate_ * 1e9));
}

}  // namespace msgq
