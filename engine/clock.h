// Clock: the source of "now" for the engine, injected so that scheduling and
// backoff are testable without sleeping.
//
// RealClock reads absl::Now(). FakeClock (tests) only moves when told to.
// Both are thread-safe.
#ifndef MSGQ_ENGINE_CLOCK_H_
#define MSGQ_ENGINE_CLOCK_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace msgq {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Now as Unix epoch nanoseconds, the unit of time_next and time_acked.
  int64_t NowNanos() const { return absl::ToUnixNanos(Now()); }
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  // A process-wide instance.
  static Clock* Get();
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_CLOCK_H_
