#include "engine/clock.h"

namespace msgq {

Clock* RealClock::Get() {
  static RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace msgq
