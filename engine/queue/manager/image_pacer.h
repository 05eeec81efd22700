// ImagePacer: when rows a table queued straight from their binlog row
// images are handed out. At most one batch of them per kEvery (bursts of
// kBurst's worth), and with kBusyInFlight messages sent and not settled
// one per kBusyEvery; above that rate they wait for the next slot, so that
// under load a batch carries many messages instead of one each (each batch
// costs the subscriber a response and an ack).
//
// Example:
//   if (pacer.PumpNow(mono, reconciler.in_flight())) {
//     sends = Pump();
//   } else {
//     scheduler.WakeAt(pacer.next());  // a round hands them out then
//   }
//
// Errors: none. Thread-safety: thread-compatible; the owning
// MessageManager guards it with its mutex and passes the monotonic time.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_IMAGE_PACER_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_IMAGE_PACER_H_

#include <cstddef>

#include "absl/time/time.h"

namespace msgq {

class ImagePacer {
 public:
  static constexpr absl::Duration kEvery = absl::Milliseconds(1);
  static constexpr absl::Duration kBurst = absl::Milliseconds(20);
  static constexpr size_t kBusyInFlight = 64;
  static constexpr absl::Duration kBusyEvery = absl::Milliseconds(5);

  // Whether rows just queued from images are handed out now, at `mono`,
  // with `in_flight` messages sent and not settled; true takes the slot.
  // False: they wait until next().
  bool PumpNow(absl::Time mono, size_t in_flight);
  // When the next slot opens (InfinitePast before any was taken).
  absl::Time next() const { return next_; }

 private:
  absl::Time next_ = absl::InfinitePast();
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_IMAGE_PACER_H_
