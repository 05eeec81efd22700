// MonotonicCondVar: a condition variable for absl::Mutex whose timed waits
// run on the monotonic clock.
//
// absl::CondVar and Mutex::AwaitWithTimeout (Abseil 20220623) turn a
// timeout into a deadline on the wall clock and sleep in the kernel until
// that wall-clock time: a step of the wall clock (NTP, an operator's
// `date -s`) stretches or cuts every wait in progress by the size of the
// step. This class waits with std::condition_variable_any on
// steady_clock, which the kernel measures on CLOCK_MONOTONIC, so a wait
// of 100 ms lasts 100 ms whatever the wall clock does.
//
// Unlike Mutex::Await(Condition), nothing re-checks a condition for the
// waiter: whoever changes what a waiter waits for must Signal() or
// SignalAll() (holding the mutex or not). Spurious wake-ups happen; loop
// on the condition.
//
// Example:
//   absl::MutexLock lock(&mu_);
//   while (!stopping_) wake_.WaitFor(&mu_, interval_);
//
// Thread-safe.
#ifndef MSGQ_COMMON_MONOTONIC_COND_VAR_H_
#define MSGQ_COMMON_MONOTONIC_COND_VAR_H_

#include <chrono>
#include <condition_variable>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace msgq {

class MonotonicCondVar {
 public:
  // Releases `mu`, waits for a signal, takes `mu` again.
  void Wait(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Lockable lockable{mu};
    cv_.wait(lockable);
  }
  // Like Wait, for at most `timeout` of monotonic time (none when it is
  // not positive; an infinite one waits for a signal). True when the time
  // ran out.
  bool WaitFor(absl::Mutex* mu, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (timeout == absl::InfiniteDuration()) {
      Wait(mu);
      return false;
    }
    if (timeout <= absl::ZeroDuration()) return true;
    Lockable lockable{mu};
    return cv_.wait_for(lockable, absl::ToChronoNanoseconds(timeout)) ==
           std::cv_status::timeout;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // What std::condition_variable_any needs of a lock: the waiter holds
  // `mu` around every call.
  struct Lockable {
    absl::Mutex* mu;
    void lock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu->Lock(); }
    void unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu->Unlock(); }
  };

  std::condition_variable_any cv_;
};

}  // namespace msgq

#endif  // MSGQ_COMMON_MONOTONIC_COND_VAR_H_
