// MessageManager's binlog intake: what the binlog says of the table's rows
// (OnRowChanges) and the pacing of rows queued straight from their row
// images (ImagePacer). Whether a change is msgq's own, and whether an
// image may be used, is the RowReconciler's to say (row_reconciler.h).
#include <algorithm>
#include <utility>

#include "engine/queue/manager/message_manager.h"

namespace msgq {

void MessageManager::OnRowChanges(const std::vector<RowChange>& changes) {
  using Action = RowReconciler::BinlogAction;
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    const int64_t estimate = clock_->NowNanos();
    const absl::Time mono = clock_->MonotonicNow();
    const bool owner = OwnsLocked();
    bool queued_images = false;
    const bool ordered = !table_.settings.order_by.empty();
    bool freed = false;
    for (const RowChange& c : changes) {
      // The event's timestamp is a reading of MySQL's clock too.
      const int64_t now = std::max(estimate, c.event_time * kSecond);
      RowReconciler::BinlogVerdict verdict =
          reconciler_.OnBinlogChange(c, now, /*reading=*/owner && !paused_,
                                     /*subscribed=*/!dispatcher_.empty());
      // Due by the estimate only: a poll reads it once a reading of
      // MySQL's clock confirms its time_next (QueueImageLocked likewise
      // for images decided later).
      if ((verdict.action == Action::kDueImage ||
           verdict.action == Action::kDueRead) &&
          !ConfirmedByEventLocked(c)) {
        verdict.action = Action::kScheduled;
        ++counters_.due_unconfirmed;
      }
      switch (verdict.action) {
        case Action::kGone:
          counters_.acked_by_sql += verdict.acked_by_sql ? 1 : 0;
          cache_.RemoveQueued(c.id);
          scheduler_.ForgetFetch(c.id);
          freed |= dispatcher_.Release(c.id);  // prefetch slots
          if (gate_.Release(c.id)) {
            GateFreedLocked(true);
            freed = true;
          }
          if (ordered && owner && !paused_) scheduler_.RequestPoll();
          break;
        case Action::kOwn:
        case Action::kNotReading:  // a new owner (or resumed table) polls
          break;
        case Action::kScheduled:
          cache_.RemoveQueued(c.id);
          scheduler_.ForgetFetch(c.id);
          scheduler_.NoteDueAt(*c.time_next, mono);
          break;
        case Action::kDueIdle:  // the first subscriber polls
          cache_.RemoveQueued(c.id);
          break;
        case Action::kDueImage:
          // Queued now, so a later change of the same row in this call
          // replaces it (the cache removes it first).
          queued_images |= QueueImageLocked(c);
          break;
        case Action::kDueDeferred:  // the reads' end decides
          cache_.RemoveQueued(c.id);
          scheduler_.ForgetFetch(c.id);
          break;
        case Action::kDueRead:
          ReadAgainLocked(c.id);
          break;
      }
    }
    WakeLocked();
    // Rows just queued from images are handed out now, or by a round at
    // the pacer's next slot.
    bool pump_images = false;
    if (queued_images && !freed) {
      pump_images = image_pacer_.PumpNow(mono, reconciler_.in_flight());
      if (!pump_images) scheduler_.WakeAt(image_pacer_.next());
    }
    if (freed || pump_images) sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

bool MessageManager::ConfirmedByEventLocked(const RowChange& c) const {
  mu_.AssertHeld();
  // Without readings the clock is MySQL's own. The event's timestamp is
  // MySQL's clock when the statement started, in whole seconds (floor).
  return readings_ == nullptr ||
         (c.time_next.has_value() && *c.time_next <= c.event_time * kSecond);
}

bool MessageManager::QueueImageLocked(const RowChange& c) {
  mu_.AssertHeld();
  cache_.RemoveQueued(c.id);
  scheduler_.ForgetFetch(c.id);
  if (!ConfirmedByEventLocked(c)) {
    // Not known to be due by MySQL's clock: the poll at its due time, once
    // a reading confirms it, reads it.
    scheduler_.NoteDueAt(*c.time_next, clock_->MonotonicNow());
    ++counters_.due_unconfirmed;
    return false;
  }
  if (gate_.on()) {  // its image has no key: poll for it
    scheduler_.RequestPoll();
    return false;
  }
  std::vector<Message> image{MessageOf(c)};
  AddToCacheLocked(image);
  ++counters_.image_rows;
  return true;
}

void MessageManager::ReadAgainLocked(const std::string& id) {
  mu_.AssertHeld();
  // Priority, schedule or payload may have changed: read it again.
  cache_.RemoveQueued(id);
  // msgq_order_by: only a key's head may be read, and a settled head lets
  // the next one go; rows are found by polls (which check headship), not
  // fetched by id. msgq_concurrency_by likewise: a poll reads what a key's
  // room allows.
  const bool keyed = !table_.settings.order_by.empty() || gate_.on();
  if (!options_.binlog_fetch_by_id || keyed) {
    scheduler_.RequestPoll();
  } else if (cache_.full()) {
    scheduler_.NoteBacklog();  // the poll at drain picks it up
  } else {
    scheduler_.NameForFetch(id);
  }
}

void MessageManager::DeferredDecidedLocked(RowReconciler::Deferred deferred) {
  mu_.AssertHeld();
  for (const RowChange& c : deferred.images) QueueImageLocked(c);
  for (const std::string& id : deferred.read) ReadAgainLocked(id);
}

}  // namespace msgq
