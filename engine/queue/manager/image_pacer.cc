// ImagePacer: see image_pacer.h.
#include "engine/queue/manager/image_pacer.h"

#include <algorithm>

namespace msgq {

bool ImagePacer::PumpNow(absl::Time mono, size_t in_flight) {
  // Many messages unsettled: subscribers are busy; gather a larger batch.
  if (in_flight >= kBusyInFlight) {
    next_ = std::max(next_, mono + kBusyEvery);
  }
  if (mono < next_) return false;
  next_ = std::max(next_, mono - kBurst) + kEvery;
  return true;
}

}  // namespace msgq
