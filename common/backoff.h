// Backoff computes retry delays: capped exponential growth with
// multiplicative jitter, reset after a success. The one copy used by the
// client (stream reopen), the binlog watcher (reconnect) and the message
// manager (MySQL retry).
//
// The n-th delay since the last Reset() (n = 0, 1, ...) is
//   min(max, initial * multiplier^n * (1 + u)),  u uniform in [-jitter,
//   +jitter]
// so a delay never exceeds `max` and, away from the cap, stays within
// +-jitter of the nominal value. Randomness comes from a seeded generator, so
// a given seed always yields the same sequence (tests rely on this).
//
// Example:
//   Backoff backoff(BackoffOptions{}, /*seed=*/42);
//   while (!Connect().ok()) SleepFor(backoff.Next());
//   backoff.Reset();
//
// Thread-compatible: one owner calls Next() and Reset().
#ifndef MSGQ_COMMON_BACKOFF_H_
#define MSGQ_COMMON_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace msgq {

struct BackoffOptions {
  // Delay before the first retry.
  absl::Duration initial = absl::Milliseconds(100);
  // Growth factor per failed attempt; values below 1 are treated as 1.
  double multiplier = 2.0;
  // Upper bound of any delay, jitter included.
  absl::Duration max = absl::Seconds(5);
  // Relative jitter, clamped to [0, 1]: 0.2 spreads each delay by +-20%.
  double jitter = 0.2;
};

class Backoff {
 public:
  Backoff(const BackoffOptions& options, uint64_t seed);

  // The delay to wait before the next attempt; advances the sequence.
  absl::Duration Next();
  // Starts the sequence over at `initial` (call after a success).
  void Reset() { attempt_ = 0; }

 private:
  // Constant after construction.
  const BackoffOptions options_;

  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace msgq

#endif  // MSGQ_COMMON_BACKOFF_H_
