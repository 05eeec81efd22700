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
  if (offset_.has_value() && *offset_ >= lower && *offset_ <= upper) return;
  offset_ = lower;
}

std::optional<absl::Duration> DbClock::offset() const {
  absl::MutexLock lock(&mu_);
  return offset_;
}

}  // namespace msgq
