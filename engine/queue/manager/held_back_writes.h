// HeldBackWrites: a table's postpones and acks that another transaction's
// row lock held back (WriteResult::locked), until a retry commits them.
// It keeps the postpones still being written and the acks of requests
// answered already, each list retried together once its retry time came
// (`retry` after the list's first write was held back); the rows with a
// write held back, waiting or being retried (a count per row); and the
// fence: when the ack wait of the latest send such a write settles has run
// out, the longest Stop() keeps retrying (docs/design/locked-rows.md).
//
// Example:
//   HeldBackWrites held(options.locked_retry, settings.ack_wait);
//   if (held.RowHeld(id, mono)) ++counters.locked_rows;  // first for it
//   held.HoldPostpone(std::move(postpone));
//   held.ArmRetries(mono);            // after a round's settling
//   ...
//   std::vector<Postpone> retry = held.TakePostpones(mono, /*all=*/false);
//   // empty until the retry time; the round then retries them
//   held.RowFreed(id);                // a retry committed (or failed)
//
// Errors: none. Thread-safety: thread-compatible; the owning
// MessageManager guards it with its mutex and passes the monotonic time.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_HELD_BACK_WRITES_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_HELD_BACK_WRITES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/queue/manager/manager_round.h"
#include "engine/queue/settlement_ledger.h"

namespace msgq {

class HeldBackWrites {
 public:
  using Postpone = SettlementLedger::Postpone;

  // `retry`: how long after a list was held back it is retried;
  // `ack_wait`: the table's, which bounds the fence.
  HeldBackWrites(absl::Duration retry, absl::Duration ack_wait);

  // A write of row `id`, sent before `mono`, was held back: the fence moves
  // to at least mono + ack_wait. True when it is the row's first write held
  // back (the row is new to rows()).
  bool RowHeld(const std::string& id, absl::Time mono);
  // A write of `id` that was held back is done (committed or given up).
  void RowFreed(const std::string& id);
  // Whether `id` has a write held back.
  bool RowWaiting(absl::string_view id) const { return rows_.contains(id); }
  // The rows with a write held back.
  size_t rows() const { return rows_.size(); }

  // A postpone still being written (the ledger keeps its row in flight).
  void HoldPostpone(Postpone postpone);
  // An ack whose request was answered (done is null).
  void HoldAck(PendingAck ack);
  // A list held back and not yet timed is retried from mono + retry.
  void ArmRetries(absl::Time mono);

  // The held-back postpones (acks) to retry now: all of them when `all`
  // (stopping) or once their retry time came at `mono`; else none.
  std::vector<Postpone> TakePostpones(absl::Time mono, bool all);
  std::vector<PendingAck> TakeAcks(absl::Time mono, bool all);
  // When the postpones (acks) held back are retried; InfiniteFuture when
  // there are none.
  absl::Time postpones_retry_at() const;
  absl::Time acks_retry_at() const;

  bool empty() const { return postpones_.empty() && acks_.empty(); }
  bool acks_waiting() const { return !acks_.empty(); }
  // A held-back ack cancelled its row's postpone: the row stays due in
  // MySQL until the ack commits.
  bool AckCancelledPostpone() const;
  // The monotonic time past which retrying serves nothing (InfinitePast
  // before any write was held back).
  absl::Time fence() const { return fence_; }

  // Gives every held-back write up (stopping); returns how many there were
  // (postpones plus acked ids).
  size_t GiveUp();

 private:
  const absl::Duration retry_;
  const absl::Duration ack_wait_;
  std::vector<Postpone> postpones_;
  absl::Time postpones_at_ = absl::InfiniteFuture();
  std::vector<PendingAck> acks_;
  absl::Time acks_at_ = absl::InfiniteFuture();
  // Per row, its writes held back, waiting or being retried.
  absl::flat_hash_map<std::string, int> rows_;
  absl::Time fence_ = absl::InfinitePast();
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_HELD_BACK_WRITES_H_
