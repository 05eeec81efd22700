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
// Example:
//   GroupLedger ledger(*ParseGtidList("0-1-10"));
//   ledger.Offer(*ParseGtid("0-1-11"), "a");
//   ledger.Offer(*ParseGtid("0-1-12"), "b");
//   ledger.See(*ParseGtid("0-1-13"));
//   ledger.Take(/*subscriber=*/1, 10);   // {a, 0}, {b, 0}
//   ledger.Ack({"b"});                   // 1; floor still 0-1-10
//   ledger.Ack({"a"});                   // 1; floor 0-1-13
//
// Errors: none; ParseGtid answers INVALID_ARGUMENT for a malformed GTID.
//
// Thread-compatible (the caller locks). No I/O.
#ifndef MSGQ_ENGINE_GROUPS_GROUP_LEDGER_H_
#define MSGQ_ENGINE_GROUPS_GROUP_LEDGER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
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
  // and marks them held by it.
  std::vector<Taken> Take(SubscriberId subscriber, size_t max);
  // Puts messages `subscriber` holds back in the queue, at their commit
  // place (a batch that could not be written). Ids it does not hold are
  // ignored. Returns how many went back.
  size_t Return(SubscriberId subscriber, const std::vector<std::string>& ids);
  // Puts everything `subscriber` holds back in the queue (it left).
  size_t ReturnAll(SubscriberId subscriber);

  // Settles messages by id, queued or held by anyone; unknown ids count 0.
  // Returns how many were settled; the floor may have moved.
  int64_t Ack(const std::vector<std::string>& ids);

  const GtidList& floor() const { return floor_; }
  size_t pending() const { return messages_.size(); }  // unsettled
  size_t queued() const { return queue_.size(); }      // not held
  size_t held(SubscriberId subscriber) const;
  bool has_queued() const { return !queue_.empty(); }

 private:
  struct Transaction {
    uint32_t server = 0;
    size_t unsettled = 0;
  };
  using TxnKey = std::pair<uint32_t, uint64_t>;  // domain, sequence
  struct Pending {
    TxnKey txn;
    uint64_t arrival = 0;  // commit order across domains
    SubscriberId holder = 0;
    int64_t sends = 0;
  };

  bool AtOrBelowFloor(const Gtid& gtid) const;
  // Moves the floor over the settled transactions at each domain's front.
  void Advance();
  void Requeue(const std::string& id, Pending& p);

  GtidList floor_;
  // The last transaction seen: more of its rows may follow.
  std::optional<Gtid> open_;
  std::map<TxnKey, Transaction> transactions_;
  absl::flat_hash_map<std::string, Pending> messages_;
  std::map<uint64_t, std::string> queue_;  // by arrival
  absl::flat_hash_map<SubscriberId, absl::flat_hash_set<std::string>> held_;
  uint64_t next_arrival_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_GROUP_LEDGER_H_
