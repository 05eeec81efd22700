// Redelivery backoff: when a sent message is postponed, and by how much.
//
// After a send, a message with epoch e (sends before this one) gets
//   time_next = now + ack_wait + clamp(floor(min_backoff * 2^e * jitter),
//                                      min_backoff, max_backoff)
// with jitter uniform in [0.666, 1.333), as Vitess does. JitterSource is the
// injected randomness; SeededJitter is deterministic for a given seed.
#ifndef MSGQ_ENGINE_QUEUE_REDELIVERY_BACKOFF_H_
#define MSGQ_ENGINE_QUEUE_REDELIVERY_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "engine/table_settings.h"

namespace msgq {

inline constexpr double kMinJitter = 0.666;
inline constexpr double kMaxJitter = 1.333;

class JitterSource {
 public:
  virtual ~JitterSource() = default;
  // A factor in [kMinJitter, kMaxJitter). Thread-safe.
  virtual double Next() = 0;
};

class SeededJitter final : public JitterSource {
 public:
  explicit SeededJitter(uint64_t seed) : rng_(seed) {}
  double Next() override;

 private:
  absl::Mutex mu_;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
};

// Always returns the same factor (tests).
class FixedJitter final : public JitterSource {
 public:
  explicit FixedJitter(double factor) : factor_(factor) {}
  double Next() override { return factor_; }

 private:
  const double factor_;
};

// The delay from `now` to the next attempt, in nanoseconds, for a message sent
// with `epoch` previous sends: ack_wait + clamp(floor(min_backoff * 2^epoch *
// jitter), min_backoff, max_backoff). Saturates instead of overflowing for
// large epochs. A negative epoch counts as 0.
int64_t PostponeDelayNanos(const TableSettings& settings, int64_t epoch,
                           double jitter);

// The backoff part alone: clamp(floor(min_backoff * 2^epoch * jitter),
// min_backoff, max_backoff) in nanoseconds. A nack without a delay retries
// the message after this (no ack wait: its consumer already answered).
int64_t RedeliveryBackoffNanos(const TableSettings& settings, int64_t epoch,
                               double jitter);

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_REDELIVERY_BACKOFF_H_
