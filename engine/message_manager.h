// MessageManager: runs one message table as a queue.
//
// It keeps the table's MessageCache filled from MySQL (polls), hands batches
// round-robin to subscribers, postpones every sent batch (redelivery with
// backoff), acks, and purges old acked rows. All of its MySQL work runs on
// one thread of its own, through a MessageStore, and is coalesced: whatever
// postpones and acks piled up while the previous statement ran go out
// together in one transaction. Sending is event driven and never waits for
// MySQL.
//
// Scheduling: the manager polls when a subscriber arrives, every
// vt_poller_interval, as soon as a full cache drains to a low watermark, and
// at the earliest known future time_next (its own postpones and the
// NextDueAfter query), so messages due in the future go out on time however
// long the interval is. A table with no subscribers is not polled.
//
// Thread-safety: all public methods are thread-safe and never block on MySQL
// or on subscribers. No lock is held while calling a Subscriber or the store.
// Lifetime: Start() once, Stop() once before destruction.
#ifndef MSGQ_ENGINE_MESSAGE_MANAGER_H_
#define MSGQ_ENGINE_MESSAGE_MANAGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/backoff.h"
#include "engine/clock.h"
#include "engine/message_cache.h"
#include "engine/message_store.h"
#include "engine/message_table.h"
#include "engine/row_change.h"
#include "engine/subscriber.h"

namespace msgq {

class MessageManager {
 public:
  struct Options {
    // Batches handed to one subscriber and not yet written.
    int max_batches_per_subscriber = 2;
    // Rows deleted per purge statement.
    int purge_batch = 500;
    // Ack requests waiting for their statement; more get RESOURCE_EXHAUSTED.
    int max_pending_acks = 10000;
    // Ids in one MessageAck request.
    int max_ids_per_ack = 100000;
    // Reads of a binlog-named row that is not visible yet: first delay,
    // doubled per attempt, and the number of attempts.
    absl::Duration refetch_delay = absl::Milliseconds(5);
    int max_refetches = 5;
    // How rows the binlog names are read: true = by primary key (only those
    // rows); false = the event just triggers a poll of the table. Kept to
    // measure the two (docs/benchmarks.md).
    bool binlog_fetch_by_id = true;
    // Reconnect backoff after MySQL errors: doubles from min to max.
    absl::Duration retry_min = absl::Milliseconds(100);
    absl::Duration retry_max = absl::Seconds(10);
  };

  struct Stats {
    int subscribers = 0;
    int64_t queued = 0;
    int64_t in_flight = 0;
    int64_t polls = 0;
    int64_t sent = 0;
    int64_t acked = 0;
    bool mysql_ok = true;
  };

  using AckCallback = std::function<void(absl::StatusOr<int64_t>)>;

  MessageManager(MessageTable table, std::unique_ptr<MessageStore> store,
                 Clock* clock, JitterSource* jitter, Options options);
  ~MessageManager();
  MessageManager(const MessageManager&) = delete;
  MessageManager& operator=(const MessageManager&) = delete;

  // Starts the manager's thread.
  void Start();
  // Stops the thread (after flushing pending postpones and acks if MySQL is
  // reachable), fails waiting acks with UNAVAILABLE and closes every
  // subscriber with `reason`. Idempotent.
  void Stop(absl::Status reason);

  // Adds a subscriber; the first one triggers an immediate poll.
  // UNAVAILABLE when the manager is stopping.
  absl::Status Subscribe(std::shared_ptr<Subscriber> subscriber);
  // Removes a subscriber; no Send reaches it after this returns... except one
  // already in progress on another thread. Its unacked messages come back
  // after their time_next.
  void Unsubscribe(const Subscriber* subscriber);
  // A batch handed to `subscriber` was written: frees its slot.
  void OnSendDone(const Subscriber* subscriber);
  // A batch handed to `subscriber` was not delivered (its stream ended):
  // frees its slot and queues the messages again for other subscribers.
  void OnSendFailed(const Subscriber* subscriber, MessageBatch batch);

  // Acks `ids` (text form as streamed). `done` runs exactly once, on the
  // manager's thread or inline, with the number of rows that went from
  // unacked to acked, or: INVALID_ARGUMENT (malformed id, too many ids),
  // UNAVAILABLE (MySQL unreachable or manager stopping), RESOURCE_EXHAUSTED
  // (too many acks waiting).
  void Ack(std::vector<std::string> ids, AckCallback done);

  // Tells the manager a committed row is due at `time_next` (binlog, tests).
  void NoteDueAt(int64_t time_next);

  // Committed changes from the binlog: new or rescheduled rows that are due
  // are fetched by id in the next round (one statement for all of them),
  // future ones are scheduled, acked or deleted ones leave the cache. Rows
  // in flight are msgq's own postpones and acks and are left alone.
  void OnRowChanges(const std::vector<RowChange>& changes);

  // Polls in the next round (e.g. after the binlog stream restarted).
  void RequestPoll();

  // One round of MySQL work at the clock's current time, synchronously:
  // pending writes, then a poll and a purge step if due. The thread calls it;
  // unit tests call it directly (without Start) with a fake clock.
  void RunOnce();

  Stats stats() const;
  const MessageTable& table() const { return table_; }

 private:
  struct SubscriberSlot {
    std::shared_ptr<Subscriber> subscriber;
    int outstanding = 0;
    uint64_t next_sequence = 0;
  };
  struct Send {
    std::shared_ptr<Subscriber> subscriber;
    uint64_t sequence = 0;
    MessageBatch batch;
  };
  struct PendingAck {
    std::vector<std::string> ids;
    AckCallback done;
    // Postpones this ack cancelled: restored if the ack fails.
    std::vector<std::pair<std::string, int64_t>> cancelled_postpones;
  };
  struct Work {
    int64_t now = 0;
    WriteBatch writes;
    std::vector<PendingAck> acks;
    std::vector<std::pair<std::string, int64_t>> postponed;  // id, epoch
    bool poll = false;
    int poll_limit = 0;
    std::vector<std::string> fetch_ids;
    bool purge = false;
  };
  using Sends = std::vector<Send>;

  void Run();
  bool HaveWorkLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time NextDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool PollDueLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Binlog-named rows are waiting to be read by id, and may be now.
  bool FetchDueLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Work TakeWorkLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoWork(Work work);
  // Each returns false when MySQL turned out to be unreachable.
  bool DoWrites(Work& work);
  bool DoPoll(const Work& work);
  bool DoFetch(const Work& work);
  // Adds polled or fetched rows to the cache; notes when it overflowed.
  void AddToCacheLocked(std::vector<Message>& rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteDueAtLocked(int64_t time_next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoPurge(const Work& work);
  // Hands queued messages to free subscribers; returns the sends to make
  // once the lock is released.
  Sends PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One batch of `subscriber` is no longer outstanding.
  void FreeSlotLocked(const Subscriber* subscriber)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(Sends sends);
  void MysqlFailedLocked(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MysqlOkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseAckingLocked(const std::vector<std::string>& ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `id` out of flight once no ack or postpone is owed for it.
  void ReleaseIfSettledLocked(const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const MessageTable table_;
  const std::unique_ptr<MessageStore> store_;  // used by the work thread only
  Clock* const clock_;
  JitterSource* const jitter_;
  const Options options_;
  const std::string log_name_;

  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  MessageCache cache_ ABSL_GUARDED_BY(mu_);
  std::vector<SubscriberSlot> subscribers_ ABSL_GUARDED_BY(mu_);
  size_t next_subscriber_ ABSL_GUARDED_BY(mu_) = 0;
  // Sent, waiting for their postpone: id -> epoch at send.
  absl::flat_hash_map<std::string, int64_t> to_postpone_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingAck> acks_ ABSL_GUARDED_BY(mu_);
  // Ids with an ack in progress (count of requests naming them).
  absl::flat_hash_map<std::string, int> acking_ ABSL_GUARDED_BY(mu_);
  bool poll_requested_ ABSL_GUARDED_BY(mu_) = false;
  // Due rows named by the binlog, to read by primary key.
  absl::flat_hash_set<std::string> fetch_ids_ ABSL_GUARDED_BY(mu_);
  // Named rows a fetch did not find: the binlog can run ahead of a commit
  // becoming visible to other sessions. id -> fetches so far; read again at
  // refetch_at_ with a doubling delay, then left to the poll.
  absl::flat_hash_map<std::string, int> refetch_ ABSL_GUARDED_BY(mu_);
  absl::Time refetch_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // The last poll could not take every due row: poll again on drain.
  bool more_due_ ABSL_GUARDED_BY(mu_) = false;
  bool purge_more_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_poll_at_ ABSL_GUARDED_BY(mu_);
  absl::Time next_purge_at_ ABSL_GUARDED_BY(mu_);
  std::optional<int64_t> next_due_ns_ ABSL_GUARDED_BY(mu_);
  bool mysql_ok_ ABSL_GUARDED_BY(mu_) = true;
  absl::Duration retry_delay_ ABSL_GUARDED_BY(mu_);
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  Stats counters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_MESSAGE_MANAGER_H_
