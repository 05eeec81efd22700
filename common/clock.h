// Clock: the sources of "now" for the engine, injected so that scheduling and
// backoff are testable without sleeping.
//
// Two readings: Now() is the wall clock (Unix time; message due times
// time_next and time_acked are in it, since MySQL and producers share it);
// MonotonicNow() never steps back or jumps with NTP and is used for every
// interval, deadline and retry delay. Its epoch is arbitrary: only
// differences between two readings mean anything.
//
// RealClock reads absl::Now() and std::chrono::steady_clock. FakeClock
// (tests) only moves when told to: Advance() moves both readings, Set()
// steps only the wall clock (as NTP would). Both are thread-safe.
#ifndef MSGQ_COMMON_CLOCK_H_
#define MSGQ_COMMON_CLOCK_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace msgq {

// One second in Unix epoch nanoseconds, the unit of time_next and
// time_acked (the engine's one time type for due times).
inline constexpr int64_t kSecond = 1'000'000'000;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // A reading of the monotonic clock.
  virtual absl::Time MonotonicNow() const = 0;
  // Now as Unix epoch nanoseconds, the unit of time_next and time_acked.
  int64_t NowNanos() const { return absl::ToUnixNanos(Now()); }
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Time MonotonicNow() const override;
  // A process-wide instance.
  static Clock* Get();
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start) : now_(start), mono_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  absl::Time MonotonicNow() const override {
    absl::MutexLock lock(&mu_);
    return mono_;
  }
  // Time passes: both readings move by `d`.
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
    mono_ += d;
  }
  // The wall clock is stepped to `t`; the monotonic one does not move.
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Time mono_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_COMMON_CLOCK_H_
