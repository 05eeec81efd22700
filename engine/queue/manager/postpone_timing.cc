// PostponeTiming: see postpone_timing.h.
#include "engine/queue/manager/postpone_timing.h"

namespace msgq {

absl::Time PostponeTiming::Cutoff(absl::Time mono, bool all) const {
  if (all) return absl::InfiniteFuture();
  if (grace_ > absl::ZeroDuration()) return mono - grace_;
  // With row images most sends happen between rounds; like a send during a
  // round's read, each waits for the round after the next one to start,
  // which gives its ack a round's time to cancel the postpone.
  if (binlog_row_images_) return previous_take_;
  return absl::InfiniteFuture();
}

absl::Time PostponeTiming::DueAt(absl::Time oldest, bool all) const {
  if (all || grace_ <= absl::ZeroDuration()) return absl::InfinitePast();
  return oldest + grace_;
}

}  // namespace msgq
