// MessageManager: what the binlog says of the table's rows (OnRowChanges),
// and when a due row may be queued straight from its row image.
#include <algorithm>
#include <utility>

#include "engine/queue/manager/message_manager.h"

namespace msgq {
namespace {

// How far behind the binlog may be read, by the rows event's timestamp
// (whole seconds), for a row image to be used.
constexpr absl::Duration kImageMaxLag = absl::Seconds(3);

// Rows queued from images are handed out at once while the table hands out
// at most one batch of them per kImagePumpEvery (with bursts of
// kImagePumpBurst's worth); above that rate they wait for the next slot,
// so that under load a batch carries many messages instead of one each
// (each batch costs the subscriber a response and an ack).
constexpr absl::Duration kImagePumpEvery = absl::Milliseconds(1);
constexpr absl::Duration kImagePumpBurst = absl::Milliseconds(20);
// With this many messages sent and not settled, a batch of images waits
// kImageBusyEvery to gather more.
constexpr size_t kImageBusyInFlight = 64;
constexpr absl::Duration kImageBusyEvery = absl::Milliseconds(5);

Message MessageOf(const RowChange& c) {
  Message m;
  m.id = c.id;
  m.priority = c.priority;
  m.time_next = c.time_next.value_or(0);
  m.epoch = c.epoch;
  m.time_created = c.time_created;
  m.fair_key = c.fair_key;
  m.row = c.row;
  return m;
}

}  // namespace

bool MessageManager::ImageUsableLocked(const RowChange& c, int64_t now,
                                       absl::Time mono) const {
  if (!options_.binlog_row_images || c.row == nullptr) return false;
  // A new manager or owner does not know what the one before it read and
  // sent: images wait until the binlog is read past that time.
  if (mono < images_from_) return false;
  // An image is the row as it was committed. It may be sent only if no
  // read since that commit could have returned the row (and sent it, and
  // seen it acked): the binlog is read at most kImageMaxLag behind, and no
  // read within that long named the id (nor was forgotten early).
  const int64_t lag = absl::ToInt64Nanoseconds(kImageMaxLag);
  if (c.event_time * 1'000'000'000 < now - lag) return false;
  if (read_ids_.Contains(c.id)) return false;
  return read_ids_.evicted_young() < now - lag - 1'000'000'000;
}

void MessageManager::NoteReadsLocked(const std::vector<Message>& rows,
                                     int64_t now) {
  if (!options_.binlog_row_images) return;
  for (const Message& m : rows) {
    read_ids_.Erase(m.id);  // the latest read counts
    read_ids_.Put(m.id, now);
  }
}

bool MessageManager::ImagePumpNowLocked(absl::Time mono) {
  // Many messages unsettled: subscribers are busy; gather a larger batch.
  if (ledger_.in_flight() >= kImageBusyInFlight) {
    image_pump_at_ = std::max(image_pump_at_, mono + kImageBusyEvery);
  }
  if (mono < image_pump_at_) {
    scheduler_.WakeAt(image_pump_at_);  // a round hands them out then
    return false;
  }
  image_pump_at_ =
      std::max(image_pump_at_, mono - kImagePumpBurst) + kImagePumpEvery;
  return true;
}

void MessageManager::ImagesWaitLocked() {
  // kImageQuiet must exceed kImageMaxLag by a second (timestamps are whole
  // seconds).
  images_from_ = clock_->MonotonicNow() + kImageQuiet;
}

void MessageManager::OnRowChanges(const std::vector<RowChange>& changes) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = clock_->NowNanos();
    const absl::Time mono = clock_->MonotonicNow();
    const bool owner = OwnsLocked();
    bool queued_images = false;
    // msgq_order_by: only a key's head may be read, and a settled head lets
    // the next one go; rows are found by polls (which check headship), not
    // fetched by id.
    const bool ordered = !table_.settings.order_by.empty();
    bool freed = false;
    for (const RowChange& c : changes) {
      if (c.deleted || c.time_acked.has_value() || !c.time_next.has_value()) {
        if (c.newly_acked && !own_acks_.Take(c.id).has_value()) {
          ++counters_.acked_by_sql;
        }
        // A purged row was acked long before: no read can show it due.
        if (!(c.deleted && c.time_acked.has_value())) {
          binlog_expect_.ExpectGone(c.id, now);
        }
        binlog_seen_.Erase(c.id);
        cache_.RemoveQueued(c.id);
        scheduler_.ForgetFetch(c.id);
        freed |= dispatcher_.Release(c.id);  // prefetch slots
        if (ordered && owner && !paused_) scheduler_.RequestPoll();
        continue;
      }
      // msgq's own postpones and acks of ids in flight: nothing new.
      if (ledger_.InFlight(c.id)) {
        binlog_expect_.Forget(c.id);
        continue;
      }
      // The echo of msgq's own postpone, read after the id left flight: if
      // the batch was handed back, the message is queued again and stays.
      if (std::optional<int64_t> own = own_postpones_.Take(c.id);
          own.has_value() && *own == *c.time_next) {
        binlog_expect_.Forget(c.id);
        continue;
      }
      binlog_expect_.ExpectRow(c.id, c.priority, *c.time_next, now);
      // The owner reads it; a new owner (or a resumed table) polls first.
      if (!owner || paused_) continue;
      // Priority, schedule or payload may have changed: read it again.
      cache_.RemoveQueued(c.id);
      if (*c.time_next > now) {
        binlog_seen_.Erase(c.id);  // on time, not "from its commit"
        scheduler_.ForgetFetch(c.id);
        scheduler_.NoteDueAt(*c.time_next);
        continue;
      }
      if (dispatcher_.empty()) continue;  // the first subscriber polls
      binlog_seen_.Put(c.id, now);
      if (ImageUsableLocked(c, now, mono)) {
        // Queued now, so a later change of the same row in this call
        // replaces it (the cache removes it first).
        scheduler_.ForgetFetch(c.id);
        std::vector<Message> image{MessageOf(c)};
        AddToCacheLocked(image);
        ++counters_.image_rows;
        queued_images = true;
      } else if (!options_.binlog_fetch_by_id || ordered) {
        scheduler_.RequestPoll();
      } else if (cache_.full()) {
        scheduler_.NoteBacklog();  // the poll at drain picks it up
      } else {
        scheduler_.NameForFetch(c.id);
      }
    }
    WakeLocked();
    if (freed || (queued_images && ImagePumpNowLocked(mono))) {
      sends = PumpLocked();
    }
  }
  Deliver(std::move(sends));
}

}  // namespace msgq
