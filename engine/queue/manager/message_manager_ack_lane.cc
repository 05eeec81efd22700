// MessageManager's ack lane: with an ack store, acks are written on a
// connection of their own, in rounds that run in parallel with the table's
// round (polls, fetches, postpones, nacks, purges). In a drain the acks
// were about half of the one connection's time
// (docs/benchmarks.md#where-the-drains-time-goes).
//
// What keeps it safe (the class contract is in message_manager.h):
// - An ack and a postpone of the same id may now commit in either order.
//   Both statements change only unacked rows, so an ack that commits first
//   leaves a later postpone nothing to change, and one that commits second
//   acks the postponed row.
// - A poll or fetch of the table's round may read a row before an ack of
//   the lane commits and see the result after the ack settled (the id left
//   flight). Such a read must not queue it: ids that leave flight while a
//   read runs are dropped from that read (left_while_reading_).
// - While MySQL is in its retry backoff the lane waits for its end, like
//   the table's round. Stop() removes the lane from the executor before the
//   final Flush, which writes the acks still waiting.
#include "absl/strings/str_cat.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {

void MessageManager::TakeAcksLocked(Work& work) {
  work.acks.swap(acks_);
  for (const PendingAck& ack : work.acks) {
    work.writes.ack_groups.push_back(ack.ticket.ids);
    // Before the write: the binlog may show it before the result is back.
    for (const std::string& id : ack.ticket.ids) own_acks_.Put(id, work.now);
  }
}

absl::Time MessageManager::RunAckRound() {
  Work work;
  {
    absl::MutexLock lock(&mu_);
    if (!AckLaneLocked() || acks_.empty()) return absl::InfiniteFuture();
    work.mono = clock_->MonotonicNow();
    if (scheduler_.Waiting(work.mono)) {
      return scheduler_.NextDeadline(ViewLocked(), work.mono,
                                     clock_->NowNanos());
    }
    work.now = clock_->NowNanos();
    work.writes.now = work.now;
    TakeAcksLocked(work);
  }
  DoWrites(work, ack_store_.get());
  ack_store_->EndRound();  // an idle lane holds no connection
  absl::MutexLock lock(&mu_);
  // msgq_order_by: a settled head lets the table's round read the next.
  if (!table_.settings.order_by.empty()) WakeLocked();
  return AckLaneLocked() && !acks_.empty() ? clock_->MonotonicNow()
                                           : absl::InfiniteFuture();
}

void MessageManager::ReadStartsLocked() { ++reads_running_; }

void MessageManager::ReadDoneLocked() {
  if (--reads_running_ == 0) left_while_reading_.clear();
}

void MessageManager::LeftFlightLocked(const std::vector<std::string>& ids) {
  if (reads_running_ == 0) return;
  left_while_reading_.insert(ids.begin(), ids.end());
}

}  // namespace msgq
