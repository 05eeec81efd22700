// RateLimiter: a token bucket on a table's sends (msgq_rate_limit messages
// per second, at most msgq_rate_burst at once). It starts full; each sent
// message takes one token; tokens return at `rate` per second up to `burst`.
//
// Pure: callers pass the monotonic time. Not thread-safe: the owning
// MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_RATE_LIMITER_H_
#define MSGQ_ENGINE_QUEUE_RATE_LIMITER_H_

#include <cstddef>

#include "absl/time/time.h"

namespace msgq {

class RateLimiter {
 public:
  // rate > 0 (messages per second), burst >= 1.
  RateLimiter(double rate, double burst, absl::Time now);

  // Whole messages that may be sent at `now`.
  size_t Available(absl::Time now);
  // `n` messages were sent (n <= Available()).
  void Take(size_t n);
  // When the next whole token is there (`now` if one is).
  absl::Time NextToken(absl::Time now) const;

 private:
  void Refill(absl::Time now);

  const double rate_;
  const double burst_;
  double tokens_;
  absl::Time last_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_RATE_LIMITER_H_
