// PostponeTiming: when the postpones of a table's sends are written. A
// sent message's postpone (its next time_next) is owed from the send on;
// a round writes those of sends made by its cutoff and leaves later ones
// owed, so that an ack that comes first cancels the postpone (one row
// update instead of two). The cutoff is
// - with a postpone grace (ManagerOptions::postpone_grace, at most a tenth
//   of the table's ack wait): the grace before the round;
// - else with row images (most sends happen between rounds): the previous
//   round's start, as for a send during a round's read;
// - else, and whenever every postpone must go now (stopping, or not the
//   owner: a handover waits for Quiesced()), no cutoff at all.
//
// Example:
//   PostponeTiming timing(grace, /*binlog_row_images=*/true);
//   bool all = stopping || !owner;   // under the manager's lock
//   postponed = reconciler.TakePostpones(timing.Cutoff(mono, all));
//   timing.Took(mono);
//   view.postpones_due_at = timing.DueAt(reconciler.OldestOwedAt(), all);
//
// Errors: none. Thread-safety: thread-compatible; the owning
// MessageManager guards it with its mutex and passes the monotonic time.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_POSTPONE_TIMING_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_POSTPONE_TIMING_H_

#include "absl/time/time.h"

namespace msgq {

class PostponeTiming {
 public:
  // `grace`: how long a postpone waits after its send (zero: none);
  // `binlog_row_images`: sends mostly happen between rounds.
  PostponeTiming(absl::Duration grace, bool binlog_row_images)
      : grace_(grace), binlog_row_images_(binlog_row_images) {}

  // Postpones of sends made by this time are written by a round that
  // takes its work at `mono`, later ones wait; InfiniteFuture: all now
  // (always when `all`).
  absl::Time Cutoff(absl::Time mono, bool all) const;
  // When the postpone owed longest, for a send at `oldest`, is to be
  // written: its grace's end; InfinitePast (now) without a grace or when
  // `all`.
  absl::Time DueAt(absl::Time oldest, bool all) const;
  // A round took its work at `mono`.
  void Took(absl::Time mono) { previous_take_ = mono; }

 private:
  const absl::Duration grace_;
  const bool binlog_row_images_;
  absl::Time previous_take_ = absl::InfinitePast();
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_POSTPONE_TIMING_H_
