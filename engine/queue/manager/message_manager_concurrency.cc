// MessageManager and msgq_concurrency_by: at most N messages of one key in
// flight. The KeyGate (key_gate.h) holds a slot per message sent; a send that
// would take a key past N leaves the message queued. After ownership is gained
// (startup, a lease, a lapse) the rows MySQL shows in flight are loaded first,
// and nothing is sent before (other instances, or this one before a restart,
// may have sent them). Polls read per key at most what its free slots allow
// (MessageStore::PollDueByKey), and a freed slot asks for a poll. The class
// contract is in message_manager.h.
#include <optional>
#include <utility>
#include <vector>

#include "engine/queue/manager/message_manager.h"

namespace msgq {

bool MessageManager::LoadGate(const Work& work) {
  std::optional<int64_t> ticket;
  {
    absl::MutexLock lock(&mu_);
    ticket = gate_.LoadTicket();
    if (!ticket.has_value()) return true;
  }
  absl::StatusOr<std::vector<InFlightRow>> rows =
      store_->ReadInFlight(work.now);
  Log log;
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    if (!rows.ok()) {
      log = StatementFailedLocked("in-flight read", rows.status());
    } else {
      log = MysqlOkLocked();
      // Ownership gained again while reading: another owner's sends may
      // be missing from the rows; the next poll reads again.
      gate_.Load(*rows, *ticket);
      sends = PumpLocked();
    }
  }
  Emit(std::move(log));
  Deliver(std::move(sends));
  return rows.ok() || !IsUnavailable(rows.status());
}

void MessageManager::GateFreedLocked(bool freed) {
  mu_.AssertHeld();
  if (!freed || !OwnsLocked() || paused_) return;
  scheduler_.RequestPoll();
  WakeLocked();
}

bool MessageManager::GateOpenLocked(int64_t now) {
  mu_.AssertHeld();
  return cache_.Any(
      [this, now](const Message& m) { return gate_.Admits(m.fair_key, now); });
}

MessageBatch MessageManager::PopGatedLocked(size_t max, int64_t now,
                                            const Dispatcher::Pick* pick) {
  mu_.AssertHeld();
  // The earliest its row can be due again (ack wait + the least backoff):
  // unless acked or nacked before, the slot frees then, and a poll reads.
  const int64_t until =
      now + absl::ToInt64Nanoseconds(table_.settings.ack_wait +
                                     table_.settings.min_backoff);
  MessageBatch batch = cache_.PopAdmitted(
      max, options_.max_batch_bytes,
      [this, now, until, pick](const Message& m) {
        // Redirected messages wait for another subscriber, slot untaken.
        if (pick != nullptr && dispatcher_.Redirects(*pick, m.id)) {
          return false;
        }
        return gate_.TryTake(m, now, until);
      });
  if (!batch.empty()) scheduler_.NoteDueAt(until, clock_->MonotonicNow());
  return batch;
}

}  // namespace msgq
