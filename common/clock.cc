#include "common/clock.h"

#include <chrono>

namespace msgq {

absl::Time RealClock::MonotonicNow() const {
  return absl::UnixEpoch() +
         absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

Clock* RealClock::Get() {
  static RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace msgq
