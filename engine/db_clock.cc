#include "engine/db_clock.h"

#include <algorithm>

namespace msgq {

absl::Time DbClock::Now() const {
  const absl::Time mono = base_->MonotonicNow();
  {
    absl::MutexLock lock(&mu_);
    if (offset_.has_value()) return mono + *offset_;
  }
  return base_->Now();
}

void DbClock::Observe(absl::Time db_now, absl::Time sent, absl::Time received) {
  received = std::max(received, sent);  // reversed readings: no round trip
  // The database read its clock at some monotonic time in [sent, received],
  // so its offset lies in [lower, upper].
  const absl::Duration lower = db_now - received;
  const absl::Duration upper = db_now - sent;
  absl::MutexLock lock(&mu_);
  last_ = Reading{absl::ToUnixNanos(db_now), sent};
  if (offset_.has_value() && *offset_ >= lower && *offset_ <= upper) return;
  offset_ = lower;
}

std::optional<absl::Duration> DbClock::offset() const {
  absl::MutexLock lock(&mu_);
  return offset_;
}

std::optional<DbReadings::Reading> DbClock::Last() const {
  absl::MutexLock lock(&mu_);
  return last_;
}

void DbClock::Request(Waiter* waiter) {
  absl::MutexLock lock(&mu_);
  waiting_.insert(waiter);
  requested_ = true;
  wake_.Signal();
}

void DbClock::Cancel(Waiter* waiter) {
  absl::MutexLock notify(&notify_mu_);
  absl::MutexLock lock(&mu_);
  waiting_.erase(waiter);
  measuring_.erase(waiter);
}

bool DbClock::WaitForMeasure(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  while (!closed_ && !requested_) {
    const absl::Time mono = base_->MonotonicNow();
    if (mono >= deadline) break;
    wake_.WaitFor(&mu_, deadline - mono);
  }
  return !closed_;
}

void DbClock::MeasureStarts() {
  absl::MutexLock lock(&mu_);
  measuring_.merge(waiting_);
  waiting_.clear();
  requested_ = false;
}

void DbClock::MeasureEnds(bool ok) {
  absl::MutexLock notify(&notify_mu_);
  std::vector<Waiter*> answered;
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {
      // Asked for again at the next measurement; not at once, which would
      // spin while MySQL is away.
      waiting_.merge(measuring_);
      measuring_.clear();
      return;
    }
    answered.assign(measuring_.begin(), measuring_.end());
    measuring_.clear();
  }
  for (Waiter* w : answered) w->ReadingTaken();
}

void DbClock::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  wake_.SignalAll();
}

}  // namespace msgq
