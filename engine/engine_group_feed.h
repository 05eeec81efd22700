// GroupFeed: delivery of one consumer group of one table
// (docs/design/consumer-groups.md#delivery-for-a-group): the rows the
// table's transactions insert, read from the binlog with their GTIDs, go
// to the group's subscribers in commit order, each message to one of them,
// until the group acks it. The delivery state is a GroupLedger
// (engine/groups/group_ledger.h); the payloads come from the binlog's row
// images (--binlog_discovery=image), or are read by id for exceptions
// loaded after a restart.
//
// Exceptions (docs/design/consumer-groups.md#slice-3-exceptions): a
// message not acked within the table's ack wait (Tick), or nacked (Nack),
// waits for the table's backoff and is sent again to any of the group's
// subscribers, or dies (msgq_max_attempts, msgq_max_age, a dead nack) for
// this group alone. Each writes one row of msgq_group_messages; an ack of
// such a message deletes it. The feed does no I/O: it collects what is to
// be written and read (TakeFlush) and the engine runs it on its groups
// worker, one flush at a time per feed (RequestFlush answers true when the
// caller must post one: at most one is queued).
//
// Example:
//   GroupFeed::Options options{.settings = table.settings};
//   auto feed = std::make_shared<GroupFeed>(row, options, clock, jitter);
//   feed->OnRowChanges(changes);          // the binlog watcher's thread
//   feed->Subscribe(sink, /*max_unacked=*/0);
//   GroupFeed::AckResult r = feed->Ack({"1", "2"});
//   if (r.write && feed->RequestFlush(waiter)) post(flush);
//   feed->Tick();                         // timer: ack waits, retries
//
// A subscriber gets batches by Subscriber::Send, at most
// max_batches_per_subscriber outstanding, and reports each with
// OnSendDone or OnSendFailed (whose messages go back to the queue, at
// their commit place), as it does to a MessageManager. A subscriber that
// leaves (Unsubscribe) gives back what it held: those messages are sent
// again to the others at once.
//
// Errors: Subscribe answers FAILED_PRECONDITION once the feed is closed;
// Nack INVALID_ARGUMENT for a delay out of [0, kMaxDurationSeconds].
//
// Thread-safe. Subscribers and waiters are called outside the feed's lock.
#ifndef MSGQ_ENGINE_ENGINE_GROUP_FEED_H_
#define MSGQ_ENGINE_ENGINE_GROUP_FEED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/groups/group_filter.h"
#include "engine/groups/group_ledger.h"
#include "engine/groups/mysql_group_store.h"
#include "engine/queue/manager/failure_policy.h"
#include "engine/queue/manager/manager_round.h"
#include "engine/queue/message.h"
#include "engine/queue/message_store.h"
#include "engine/queue/redelivery_backoff.h"
#include "engine/queue/row_change.h"
#include "engine/queue/subscriber.h"
#include "engine/table_settings.h"

namespace msgq {

class GroupFeed {
 public:
  struct Options {
    // The table's directives: vt_batch_size, vt_ack_wait, the backoff,
    // msgq_max_attempts and msgq_max_age.
    TableSettings settings;
    int max_batches_per_subscriber = 1;
    // A flush that failed is not asked for again by HasWork before this.
    absl::Duration flush_retry = absl::Seconds(1);
    // The group's filter, bound to the table's streamed columns: an insert
    // whose row image it rejects is not the group's (the floor passes it).
    // nullopt: every insert.
    std::optional<RowFilter> filter;
  };

  // What a feed has done, for logs and tests.
  struct Stats {
    int64_t offered = 0;    // inserts taken into the group
    int64_t no_image = 0;   // inserts left out: their row image is missing
    int64_t filtered = 0;   // inserts the group's filter left out
    int64_t sent = 0;       // messages handed to subscribers
    int64_t acked = 0;      // messages settled by acks
    int64_t timed_out = 0;  // not acked within the ack wait
    int64_t nacked = 0;     // retried by nacks
    int64_t died = 0;       // dead for the group
    int64_t gone = 0;       // exceptions whose row left the table
    size_t pending = 0;     // unsettled now
    size_t waiting = 0;     // for a retry
    size_t dead = 0;        // dead now
    std::string floor;      // in memory, FormatGtidList
    size_t queued = 0;      // unsettled and held by no subscriber
    // The oldest rows event timestamp (Unix ns, 1 s resolution) of the
    // unsettled messages whose payload is held; 0 when none. Found by a
    // walk over them.
    int64_t oldest_event_ns = 0;
  };

  // What one flush on the groups worker does: the exception rows to write
  // and delete, the payloads to read by id, and who waits for it.
  struct Flush {
    std::vector<GroupExceptionRow> upserts;
    std::vector<std::string> deletes;
    std::vector<std::string> fetch;
    std::vector<std::function<void(absl::Status)>> waiters;
  };

  struct AckResult {
    int64_t settled = 0;
    // Rows to delete or a floor to write: answer after a flush.
    bool write = false;
  };

  // `row`: the group as stored (its floor is where the ledger starts).
  // `clock` (Unix ns of NowNanos for ack deadlines and retry times) and
  // `jitter` are not owned and must outlive the feed.
  GroupFeed(GroupRow row, Options options, Clock* clock, JitterSource* jitter);

  const GroupRow& row() const { return row_; }

  // The changes of one rows event of the group's table, in binlog order.
  // Inserts (with their row image) above the floor are queued.
  void OnRowChanges(const std::vector<RowChange>& changes)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The group's exceptions as stored, at start (before any row change):
  // due ones are sent again once their payloads are read.
  void LoadExceptions(const std::vector<GroupExceptionRow>& rows)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Adds a subscriber; `max_unacked` (0 = unlimited) caps what it holds.
  absl::Status Subscribe(std::shared_ptr<Subscriber> subscriber,
                         int max_unacked) ABSL_LOCKS_EXCLUDED(mu_);
  void Unsubscribe(const Subscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  void OnSendDone(const Subscriber* subscriber) ABSL_LOCKS_EXCLUDED(mu_);
  void OnSendFailed(const Subscriber* subscriber, MessageBatch batch)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Settles `ids` for the group in memory (dead ones are not settled).
  AckResult Ack(const std::vector<std::string>& ids) ABSL_LOCKS_EXCLUDED(mu_);

  // Hands deliveries (id, epoch as streamed) back, as MessageNack does for
  // the default group: only a delivery whose message's sends are still
  // epoch + 1 counts; retried at now + delay (or the table's backoff for
  // the epoch), or dead (request.dead, msgq_max_attempts, msgq_max_age).
  absl::StatusOr<NackCount> Nack(std::vector<ManagerDelivery> deliveries,
                                 std::optional<absl::Duration> delay,
                                 const std::string& reason, bool dead)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Dead messages among `ids` (every one when `all`) become due now with
  // their sends reset to 0. Returns how many.
  int64_t Redrive(const std::vector<std::string>& ids, bool all)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Timer: held messages past their ack wait become exceptions (retry
  // after the backoff, or dead); due retries are queued (or their payloads
  // asked for) and sent.
  void Tick() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a flush has something to do (rows to write, payloads to read),
  // unless a failed one is to be retried later.
  bool HasWork() const ABSL_LOCKS_EXCLUDED(mu_);
  // Adds `waiter` (may be null) to the next flush. True when no flush is
  // queued: the caller must post one (it runs TakeFlush).
  bool RequestFlush(std::function<void(absl::Status)> waiter)
      ABSL_LOCKS_EXCLUDED(mu_);
  // At the start of a flush: what to do; a later RequestFlush queues the
  // next one.
  Flush TakeFlush() ABSL_LOCKS_EXCLUDED(mu_);
  // The flush's rows were written (`status` OK: they no longer hold the
  // floor back) or not (they are written again by a later flush).
  void ExceptionsWritten(const Flush& flush, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The payloads of flush.fetch as read (rows missing from an OK answer
  // left the table: settled for the group, their exception deleted), or
  // why not (asked again later).
  void Fetched(const std::vector<std::string>& asked,
               absl::StatusOr<std::vector<Message>> rows)
      ABSL_LOCKS_EXCLUDED(mu_);

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
  // Queues the due retries whose payloads are here; asks for the others.
  void ReleaseDueLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why `id`, failed after `sends` sends at `now`, must die; nullopt when
  // it may be retried.
  std::optional<std::string> DeathReasonLocked(const std::string& id,
                                               int64_t sends, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails `id` in the ledger (retry at `time_next`, or dead) and marks its
  // row to write.
  void FailLocked(const std::string& id, std::optional<int64_t> time_next,
                  int64_t now, std::string last_error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles `ids` in memory; marks the rows of exceptions to delete (and
  // says in `deletes`, when given, whether there were any).
  int64_t SettleLocked(const std::vector<std::string>& ids, bool* deletes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool FloorMovedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(std::vector<Send> sends);

  const GroupRow row_;
  const Options options_;
  const size_t batch_size_;
  const int max_batches_;
  Clock* const clock_;
  JitterSource* const jitter_;
  const FailurePolicy policy_;  // DeathReason only

  mutable absl::Mutex mu_;
  GroupLedger ledger_ ABSL_GUARDED_BY(mu_);
  // The payloads of the unsettled messages that are not dead, by id (a
  // loaded exception's once read).
  absl::flat_hash_map<std::string, Message> payloads_ ABSL_GUARDED_BY(mu_);
  std::vector<Sub> subs_ ABSL_GUARDED_BY(mu_);
  size_t next_sub_ ABSL_GUARDED_BY(mu_) = 0;  // round-robin start
  GroupLedger::SubscriberId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::string written_floor_ ABSL_GUARDED_BY(mu_);
  // Exception rows to write (nullopt: to delete), by id.
  absl::flat_hash_map<std::string, std::optional<GroupExceptionRow>> unwritten_
      ABSL_GUARDED_BY(mu_);
  // Payloads to read by id, and those being read.
  absl::flat_hash_set<std::string> fetch_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> fetching_ ABSL_GUARDED_BY(mu_);
  // A flush is queued (posted, not started); who waits for the next one.
  bool flush_queued_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::function<void(absl::Status)>> waiters_ ABSL_GUARDED_BY(mu_);
  // Monotonic: after a failed flush, HasWork waits until then.
  absl::Time retry_flush_after_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_ENGINE_GROUP_FEED_H_
