// GroupLedger: one consumer group's delivery state in memory
// (docs/design/consumer-groups.md#state-a-floor-and-its-exceptions): its
// floor (a GTID list: every transaction at or below it is settled for the
// group), the messages above it in commit order, which of them are held by
// which subscriber, and the new floor once acks settle them.
//
// The binlog gives the table's transactions in commit order; each is
// named by its GTID. The ledger is told of every transaction of the table
// it sees (See) and of each row a transaction inserted for the group
// (Offer). A transaction is settled once every message it carried is acked
// and a later transaction was seen (so no more of its rows events can
// follow); the floor advances, per replication domain, over the settled
// transactions at its front and stops at the first that is not. Acks out
// of order are kept until the ones below them come.
//
// Exceptions (docs/design/consumer-groups.md#slice-3-exceptions): a held
// message whose ack deadline passed (ExpiredAt) or that was nacked is
// failed (Fail): it waits for its retry time (Due, then Resend puts it
// back in the queue) or is dead. A failed message counts as settled for
// the floor once its exception row is written (Recorded), so the floor
// never passes a message that is neither acked nor stored as an
// exception. Exceptions read back after a restart come in by Load. Times
// are Unix ns given by the caller; the ledger reads no clock.
//
// Example:
//   GroupLedger ledger(*ParseGtidList("0-1-10"));
//   ledger.Offer(*ParseGtid("0-1-11"), "a");
//   ledger.Offer(*ParseGtid("0-1-12"), "b");
//   ledger.See(*ParseGtid("0-1-13"));
//   ledger.Take(/*subscriber=*/1, 10);   // {a, 0}, {b, 0}
//   ledger.Ack({"b"});                   // 1; floor still 0-1-10
//   ledger.Ack({"a"});                   // 1; floor 0-1-13
//   ledger.Take(1, 10, /*deadline=*/t + ack_wait);
//   for (const auto& e : ledger.ExpiredAt(now)) ledger.Fail(e.id, retry_at);
//   ledger.Recorded(id);                 // its row is written
//
// Errors: none; ParseGtid answers INVALID_ARGUMENT for a malformed GTID.
//
// Thread-compatible (the caller locks). No I/O.
#ifndef MSGQ_ENGINE_GROUPS_GROUP_LEDGER_H_
#define MSGQ_ENGINE_GROUPS_GROUP_LEDGER_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/groups/group_start.h"

namespace msgq {

// One transaction's GTID, "domain-server-sequence".
struct Gtid {
  uint32_t domain = 0;
  uint32_t server = 0;
  uint64_t sequence = 0;
  friend bool operator==(const Gtid&, const Gtid&) = default;
};

// Parses "D-S-N" (INVALID_ARGUMENT as ParseGtidList, or for a list of more
// than one, or an empty text).
absl::StatusOr<Gtid> ParseGtid(absl::string_view text);

class GroupLedger {
 public:
  // Names a subscriber of the group; 0 is none.
  using SubscriberId = uint64_t;

  // One message handed to a subscriber: `sends` counts its sends to this
  // group before this one (the stream's Row.epoch).
  struct Taken {
    std::string id;
    int64_t sends = 0;
    friend bool operator==(const Taken&, const Taken&) = default;
  };
  // A held message whose ack deadline passed: `sends` counts its sends so
  // far (this one included).
  struct Expired {
    std::string id;
    int64_t sends = 0;
    int64_t deadline = 0;
    friend bool operator==(const Expired&, const Expired&) = default;
  };

  explicit GroupLedger(GtidList floor);

  // A transaction of the table was read (any change of it). Returns false
  // when it is at or below the floor (already settled, replayed): its
  // rows are not the group's to take.
  bool See(const Gtid& gtid);
  // A row `id` that transaction `gtid` inserted, for the group. False when
  // the transaction is at or below the floor, or `id` is pending already
  // (its first insert is still unsettled); the row is not queued then.
  bool Offer(const Gtid& gtid, const std::string& id);

  // Hands `subscriber` up to `max` queued messages, lowest commit first,
  // and marks them held by it until `deadline` (Unix ns; ExpiredAt).
  std::vector<Taken> Take(SubscriberId subscriber, size_t max,
                          int64_t deadline = kNever);
  // Puts messages `subscriber` holds back in the queue, at their commit
  // place (a batch that could not be written). Ids it does not hold are
  // ignored. Returns how many went back.
  size_t Return(SubscriberId subscriber, const std::vector<std::string>& ids);
  // Puts everything `subscriber` holds back in the queue (it left).
  size_t ReturnAll(SubscriberId subscriber);

  // Settles messages by id, queued, held, or waiting for a retry; unknown
  // and dead ids count 0. Returns how many were settled; the floor may have
  // moved. Appends to `exceptions` (when given) the settled ids that had
  // an exception: their rows are to be deleted.
  int64_t Ack(const std::vector<std::string>& ids,
              std::vector<std::string>* exceptions = nullptr);

  // ---- Exceptions ----
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // The held messages whose deadline is at or before `now`, earliest
  // first. They stay held until Fail'ed.
  std::vector<Expired> ExpiredAt(int64_t now) const;
  // Sends so far of a pending message that is not dead; nullopt otherwise.
  std::optional<int64_t> Sends(const std::string& id) const;
  // A pending, not dead message failed: it is let go by its holder and
  // waits until `time_next` (Due), or is dead (nullopt). It is an exception
  // from now on (until acked). False for unknown or dead ids.
  bool Fail(const std::string& id, std::optional<int64_t> time_next);
  // The waiting messages due at `now` (time_next <= now), earliest first.
  std::vector<std::string> Due(int64_t now) const;
  // A waiting message goes back to the queue, at its commit place. False
  // when `id` is not waiting.
  bool Resend(const std::string& id);
  // The exception row of `id` is written: the message no longer holds the
  // floor back. Unknown ids are ignored.
  void Recorded(const std::string& id);
  // An exception read back from msgq_group_messages: `attempts` sends so
  // far, due at `time_next` or dead (nullopt). It is recorded and holds no
  // transaction back. False when `id` is pending already.
  bool Load(const std::string& id, int64_t attempts,
            std::optional<int64_t> time_next);
  // Dead messages among `ids` (every dead one when `all`) wait again, due
  // at `now`, with their sends reset to 0. Returns the ids redriven.
  std::vector<std::string> Redrive(const std::vector<std::string>& ids,
                                   bool all, int64_t now);

  const GtidList& floor() const { return floor_; }
  size_t pending() const { return messages_.size(); }  // unsettled
  size_t queued() const { return queue_.size(); }      // not held
  size_t held(SubscriberId subscriber) const;
  bool has_queued() const { return !queue_.empty(); }
  size_t waiting() const { return waiting_.size(); }  // for a retry
  size_t dead() const { return dead_; }
  bool contains(const std::string& id) const { return messages_.contains(id); }

 private:
  struct Transaction {
    uint32_t server = 0;
    size_t unsettled = 0;
  };
  using TxnKey = std::pair<uint32_t, uint64_t>;  // domain, sequence
  enum class State { kQueued, kHeld, kWaiting, kDead };
  struct Pending {
    TxnKey txn;
    uint64_t arrival = 0;  // commit order across domains
    SubscriberId holder = 0;
    int64_t sends = 0;
    State state = State::kQueued;
    // kHeld: the ack deadline; kWaiting: the retry time.
    int64_t time = kNever;
    // Counted in its transaction's unsettled messages (until acked or
    // recorded; never for a loaded exception).
    bool counted = true;
    bool exception = false;  // failed since its last ack: it has a row
  };

  bool AtOrBelowFloor(const Gtid& gtid) const;
  // Moves the floor over the settled transactions at each domain's front.
  void Advance();
  void Requeue(const std::string& id, Pending& p);
  // Takes `id` out of where its state keeps it (queue, holder, waiting).
  void Detach(const std::string& id, Pending& p);
  // Makes `p` an exception: waiting until `time_next`, or dead without one.
  void Park(const std::string& id, Pending& p,
            std::optional<int64_t> time_next);
  // No longer counted in its transaction; true when that may move the
  // floor.
  bool Uncount(Pending& p);

  GtidList floor_;
  // The last transaction seen: more of its rows may follow.
  std::optional<Gtid> open_;
  std::map<TxnKey, Transaction> transactions_;
  absl::flat_hash_map<std::string, Pending> messages_;
  std::map<uint64_t, std::string> queue_;  // by arrival
  absl::flat_hash_map<SubscriberId, absl::flat_hash_set<std::string>> held_;
  // Held messages by deadline; waiting ones by retry time.
  std::set<std::pair<int64_t, std::string>> deadlines_;
  std::set<std::pair<int64_t, std::string>> waiting_;
  size_t dead_ = 0;
  uint64_t next_arrival_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_GROUP_LEDGER_H_
