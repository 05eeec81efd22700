// GroupFeed: live delivery of one consumer group of one table
// (docs/design/consumer-groups.md#delivery-for-a-group): the rows the
// table's transactions insert, read from the binlog with their GTIDs, go
// to the group's subscribers in commit order, each message to one of them,
// until the group acks it. The delivery state is a GroupLedger
// (engine/groups/group_ledger.h); the payloads come from the binlog's row
// images (--binlog_discovery=image).
//
// Example:
//   auto feed = std::make_shared<GroupFeed>(row, table.settings.batch_size,
//                                           2);
//   feed->OnRowChanges(changes);          // the binlog watcher's thread
//   feed->Subscribe(sink, /*max_unacked=*/0);
//   feed->Ack({"1", "2"});                // 2; floor() may have moved
//
// A subscriber gets batches by Subscriber::Send, at most
// max_batches_per_subscriber outstanding, and reports each with
// OnSendDone or OnSendFailed (whose messages go back to the queue, at
// their commit place), as it does to a MessageManager. A subscriber that
// leaves (Unsubscribe) gives back what it held: those messages are sent
// again to the others (a group has no ack wait yet).
//
// Errors: Subscribe answers FAILED_PRECONDITION once the feed is closed.
//
// Thread-safe. Subscribers are called outside the feed's lock.
#ifndef MSGQ_ENGINE_ENGINE_GROUP_FEED_H_
#define MSGQ_ENGINE_ENGINE_GROUP_FEED_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/groups/group_ledger.h"
#include "engine/groups/mysql_group_store.h"
#include "engine/queue/message.h"
#include "engine/queue/row_change.h"
#include "engine/queue/subscriber.h"

namespace msgq {

class GroupFeed {
 public:
  // What a feed has done, for logs and tests.
  struct Stats {
    int64_t offered = 0;   // inserts taken into the group
    int64_t no_image = 0;  // inserts left out: their row image is missing
    int64_t sent = 0;      // messages handed to subscribers
    int64_t acked = 0;     // messages settled by acks
    size_t pending = 0;    // unsettled now
    std::string floor;     // in memory, FormatGtidList
  };

  // `row`: the group as stored (its floor is where the ledger starts).
  GroupFeed(GroupRow row, int batch_size, int max_batches_per_subscriber);

  const GroupRow& row() const { return row_; }

  // The changes of one rows event of the group's table, in binlog order.
  // Inserts (with their row image) above the floor are queued.
  void OnRowChanges(const std::vector<RowChange>& changes)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Adds a subscriber; `max_unacked` (0 = unlimited) caps what it holds.
  absl::Status Subscribe(std::shared_ptr<Subscriber> subscriber,
                         int max_unacked) ABSL_LOCKS_EXCLUDED(mu_);
  void Unsubscribe(const Subscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  void OnSendDone(const Subscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  void OnSendFailed(const Subscriber* subscriber, MessageBatch batch)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Settles `ids` for the group in memory; returns how many were pending.
  int64_t Ack(const std::vector<std::string>& ids) ABSL_LOCKS_EXCLUDED(mu_);
  // The floor in memory (FormatGtidList).
  std::string floor() const ABSL_LOCKS_EXCLUDED(mu_);

  // The floor to write to msgq_groups: the one in memory, when it differs
  // from the last one FloorWritten() reported (at first, the row's).
  std::optional<std::string> FloorToWrite() const ABSL_LOCKS_EXCLUDED(mu_);
  void FloorWritten(const std::string& floor) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends every subscriber's stream with `status`; later Subscribe calls
  // fail. Idempotent.
  void Close(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);

  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Sub {
    std::shared_ptr<Subscriber> subscriber;
    GroupLedger::SubscriberId id = 0;
    int max_unacked = 0;
    int outstanding = 0;  // batches sent and not reported
    uint64_t next_sequence = 0;
  };
  struct Send {
    std::shared_ptr<Subscriber> subscriber;
    uint64_t sequence = 0;
    MessageBatch batch;
  };

  // Hands queued messages to subscribers with room, round robin.
  std::vector<Send> PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Sub* FindLocked(const Subscriber* subscriber)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(std::vector<Send> sends);

  const GroupRow row_;
  const size_t batch_size_;
  const int max_batches_;

  mutable absl::Mutex mu_;
  GroupLedger ledger_ ABSL_GUARDED_BY(mu_);
  // The unsettled messages' payloads, by id.
  absl::flat_hash_map<std::string, Message> payloads_ ABSL_GUARDED_BY(mu_);
  std::vector<Sub> subs_ ABSL_GUARDED_BY(mu_);
  size_t next_sub_ ABSL_GUARDED_BY(mu_) = 0;  // round-robin start
  GroupLedger::SubscriberId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::string written_floor_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_ENGINE_GROUP_FEED_H_
