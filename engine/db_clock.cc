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
  const absl::Duration rtt = std::max(received - sent, absl::ZeroDuration());
  const absl::Duration measured = db_now - (sent + rtt / 2);
  absl::MutexLock lock(&mu_);
  if (offset_.has_value() && absl::AbsDuration(measured - *offset_) <=
                                 std::max(rtt, absl::Milliseconds(2))) {
    return;
  }
  offset_ = measured;
}

std::optional<absl::Duration> DbClock::offset() const {
  absl::MutexLock lock(&mu_);
  return offset_;
}

}  // namespace msgq
