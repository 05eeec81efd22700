// SettlementLedger: which message ids are in flight, and what MySQL write is
// still owed for each.
//
// An id is *in flight* from the moment msgq hands it to a subscriber or
// accepts an ack for it until MySQL holds its new state: the postpone of its
// last send and every ack naming it have committed (or failed in a way that
// leaves the row as MySQL already has it). While an id is in flight a poll
// or a binlog fetch must not bring back a stale copy of it (invariant 2 of
// the architecture), so the manager never queues an in-flight id it read
// from MySQL.
//
// Per id the ledger keeps three obligations:
//   owed      a send whose postpone no round has taken yet (with the epoch
//             the message was sent with);
//   writing   postpones taken by a round and not finished;
//   acks      ack requests accepted and not finished.
// The id is in flight while any of them is pending. The rules:
//   Sent           owed := epoch, at the caller's time of the send (a newer
//                  send replaces an older owed one).
//   TakePostpones  every owed id sent by a cutoff time, and every owed id
//                  a hold waits for (below): owed -> writing. (The manager
//                  defers a postpone for a short grace: an ack that comes
//                  within it cancels the postpone, so it is never written.)
//   PostponeDone   writing -1. Committed: nothing more. Transient failure
//                  (UNAVAILABLE/ABORTED): owed again unless a newer send
//                  already owes its own. Permanent failure: nothing
//                  owed; the row stays due in MySQL and the next poll sends
//                  it again.
//   BeginAck       acks +1; an owed postpone is cancelled (the ack makes it
//                  pointless) and remembered in the ticket.
//   SettleDone     acks -1. On failure the cancelled postpones are owed
//                  again (the message was delivered: it must not stay due).
//   BeginHold      a nack, an extend, or msgq's own death of a row it read
//                  was accepted: acks +1 like an ack (the id stays in
//                  flight until the write finishes, so a poll cannot bring
//                  back the state before it), but no owed postpone is
//                  cancelled: the postpone of the send a nack or extend
//                  names must commit first (it makes the row's epoch the
//                  one the nack checks), and the round that takes the nack
//                  takes the owed postpone too and writes it first.
//                  Finished with SettleDone (nothing to restore).
//   HandBack       a send that never reached its subscriber: its owed
//                  postpone is dropped. Returns whether the message may be
//                  queued again at once (not while an ack of it runs).
// Every method that can end obligations returns the ids that left flight.
//
// Pure logic: no I/O, no clock (times are values the caller passes). Not
// thread-safe: the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_SETTLEMENT_LEDGER_H_
#define MSGQ_ENGINE_QUEUE_SETTLEMENT_LEDGER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace msgq {

class SettlementLedger {
 public:
  // (id, epoch at send) of a postpone a round must write.
  using Postpone = std::pair<std::string, int64_t>;

  enum class Outcome {
    kCommitted,
    kTransient,  // nothing applied; retry (UNAVAILABLE, ABORTED)
    kPermanent,  // nothing applied; do not retry
  };

  // What an accepted ack or hold (BeginAck, BeginHold) changed, to settle
  // it later.
  struct SettleTicket {
    std::vector<std::string> ids;
    std::vector<Postpone> cancelled;  // owed postpones the ack cancelled
  };

  bool InFlight(absl::string_view id) const { return entries_.contains(id); }
  size_t in_flight() const { return entries_.size(); }
  // Sends whose postpone no round has taken yet.
  size_t owed() const { return owed_; }
  bool HasOwed() const { return owed_ > 0; }
  // Whether any send still waits for its postpone (owed or being written):
  // until none does, MySQL may hold a sent row as still due.
  bool PostponesPending() const { return owed_ > 0 || writing_ > 0; }
  bool Acking(absl::string_view id) const;

  // `id` was handed to a subscriber at `at`, sent for the (epoch+1)-th time.
  void Sent(const std::string& id, int64_t epoch,
            absl::Time at = absl::InfinitePast());

  // Moves to "writing" and returns the owed postpones of sends made at or
  // before `sent_by`, and those of ids a hold (nack, extend, death) waits
  // for, whenever sent.
  std::vector<Postpone> TakePostpones(
      absl::Time sent_by = absl::InfiniteFuture());
  // No owed postpone was sent before this (InfiniteFuture when none is
  // owed). May be earlier than the truth after acks or hand-backs cancelled
  // the oldest: the next TakePostpones makes it exact.
  absl::Time OldestOwedAt() const {
    return owed_ > 0 ? oldest_owed_at_ : absl::InfiniteFuture();
  }
  // A round's postpones finished with `outcome`. Returns the ids that left
  // flight.
  std::vector<std::string> PostponesDone(const std::vector<Postpone>& taken,
                                         Outcome outcome);

  SettleTicket BeginAck(std::vector<std::string> ids);
  // See BeginHold in the class comment.
  SettleTicket BeginHold(std::vector<std::string> ids);
  // kTransient and kPermanent are handled alike: the ack did not apply.
  std::vector<std::string> SettleDone(const SettleTicket& ticket,
                                      Outcome outcome);

  // A send of `id` never reached its subscriber. Returns true when the
  // message may be queued again at once; `left` gets `id` if it left flight.
  bool HandBack(const std::string& id, std::vector<std::string>* left);

 private:
  struct Entry {
    std::optional<int64_t> owed;  // epoch of a send whose postpone is owed
    absl::Time owed_at;           // when that send was made
    int writing = 0;
    int acks = 0;  // acks and holds (nacks, extends, deaths) running
    bool settled() const {
      return !owed.has_value() && writing == 0 && acks == 0;
    }
  };

  // Erases `id` when it has nothing pending and records it in `left`.
  void SettleIfDone(const std::string& id, std::vector<std::string>* left);
  void SetOwed(Entry& e, int64_t epoch);
  void ClearOwed(Entry& e);

  absl::flat_hash_map<std::string, Entry> entries_;
  size_t owed_ = 0;
  size_t writing_ = 0;  // sum of Entry::writing
  // At most the earliest owed_at of an owed entry (see OldestOwedAt).
  absl::Time oldest_owed_at_ = absl::InfiniteFuture();
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_SETTLEMENT_LEDGER_H_
