// MessageManager: runs one message table as a queue.
//
// It keeps the table's MessageCache filled from MySQL (polls, and rows the
// binlog names), hands batches round-robin to subscribers, postpones every
// sent batch (redelivery with backoff), acks, and purges old acked rows. Its
// parts, each with one job:
//   MessageCache      the queued messages, best first;
//   SettlementLedger  the ids in flight and the write owed for each (an id
//                     is never queued while MySQL may still hold a stale
//                     copy of it);
//   Dispatcher        the subscribers and whose turn it is;
//   RoundScheduler    when to poll, fetch, purge and retry;
// and the manager itself: the thread, MySQL health and the statements.
// All MySQL work runs in rounds, on a RoundExecutor's workers shared by
// every table (or, without one, on a thread of the manager's own), through
// a MessageStore, and is coalesced: whatever postpones and acks piled up while
// the previous statement ran go out together in one transaction. Sending is
// event driven and never waits for MySQL.
//
// Thread-safety: all public methods are thread-safe and never block on MySQL
// or on subscribers. One mutex guards the parts; it is never held while
// calling a Subscriber, the store, or writing a log line.
// Lifetime: Start() once, Stop() once before destruction.
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_MANAGER_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_MANAGER_H_

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
#include "engine/queue/backoff.h"
#include "engine/clock.h"
#include "engine/queue/dispatcher.h"
#include "engine/queue/message_cache.h"
#include "engine/queue/message_store.h"
#include "engine/message_table.h"
#include "engine/queue/round_executor.h"
#include "engine/queue/round_scheduler.h"
#include "engine/binlog/row_change.h"
#include "engine/queue/settlement_ledger.h"
#include "engine/queue/subscriber.h"

namespace msgq {

class MessageManager : private RoundExecutor::Task {
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
    // Ids in all ack requests waiting for their statement; more get
    // RESOURCE_EXHAUSTED. Bounds memory and the next poll's size.
    int max_pending_ack_ids = 200000;
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
    // +- this fraction of jitter on each retry delay.
    double retry_jitter = 0.2;
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

  // `executor` runs the rounds; null: a thread of the manager's own.
  MessageManager(MessageTable table, std::unique_ptr<MessageStore> store,
                 Clock* clock, JitterSource* jitter, Options options,
                 std::shared_ptr<RoundExecutor> executor = nullptr);
  ~MessageManager();
  MessageManager(const MessageManager&) = delete;
  MessageManager& operator=(const MessageManager&) = delete;

  // Starts running rounds (on the executor, or on a thread of its own).
  void Start();
  // Stops the thread (after flushing pending postpones and acks if MySQL is
  // reachable), fails waiting acks with UNAVAILABLE and closes every
  // subscriber with `reason`. Idempotent.
  void Stop(absl::Status reason);

  // Adds a subscriber; the first one triggers an immediate poll.
  // UNAVAILABLE when the manager is stopping.
  absl::Status Subscribe(std::shared_ptr<Subscriber> subscriber);
  // Removes a subscriber; no Send reaches it after this returns... except one
  // already in progress on another thread. Messages it received and did not
  // ack come back after their time_next; batches it hands back with
  // OnSendFailed go to the others at once.
  void Unsubscribe(const Subscriber* subscriber);
  // A batch handed to `subscriber` was written: frees its slot.
  void OnSendDone(const Subscriber* subscriber);
  // A batch handed to `subscriber` was not written (its stream is ending):
  // the subscriber gets nothing more, and the messages go to the other
  // subscribers at once, unless an ack of them is under way or they are
  // already due again in MySQL (then the next poll sends them).
  void OnSendFailed(const Subscriber* subscriber, MessageBatch batch);

  // Acks `ids` (text form as streamed). `done` runs exactly once, on the
  // manager's thread or inline, with the number of rows that went from
  // unacked to acked, or: INVALID_ARGUMENT (malformed id, too many ids),
  // UNAVAILABLE (MySQL unreachable or manager stopping), RESOURCE_EXHAUSTED
  // (too many acks or acked ids waiting).
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
  struct PendingAck {
    SettlementLedger::AckTicket ticket;
    AckCallback done;
  };
  // What one round writes and reads, taken under the lock.
  struct Work {
    int64_t now = 0;  // wall clock, Unix ns
    absl::Time mono;  // monotonic clock
    WriteBatch writes;
    std::vector<SettlementLedger::Postpone> postponed;
    std::vector<PendingAck> acks;
    RoundScheduler::Round round;
  };
  using Sends = std::vector<std::pair<Dispatcher::Pick, MessageBatch>>;
  // A line to log once the lock is released.
  using Log = std::optional<std::pair<const char*, std::string>>;

  // The manager's own thread (no executor): rounds until stopped.
  void Run();
  // RoundExecutor::Task: one round if there is work; the next deadline.
  absl::Time RunRound() override;
  // Writes what is owed, without reading (stopping).
  void Flush();
  // There may be work: wake the thread or queue a round.
  void WakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RoundScheduler::View ViewLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Work TakeWorkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoWork(Work work);
  // Each returns false when MySQL turned out to be unreachable.
  bool DoWrites(Work& work);
  bool DoPoll(const Work& work);
  bool DoFetch(const Work& work);
  void DoPurge(const Work& work);
  // Queues rows read from MySQL, skipping ids in flight.
  void AddToCacheLocked(std::vector<Message>& rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands queued messages to free subscribers; returns the sends to make
  // once the lock is released.
  Sends PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(Sends sends);
  // Records a failed statement; returns the line to log.
  Log StatementFailedLocked(const char* what, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Log MysqlOkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Emit(Log log);

  // Constant after construction.
  const MessageTable table_;
  const std::unique_ptr<MessageStore> store_;  // used by the work thread only
  Clock* const clock_;
  JitterSource* const jitter_;
  const Options options_;
  const std::shared_ptr<RoundExecutor> executor_;  // may be null
  const std::string log_name_;

  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  MessageCache cache_ ABSL_GUARDED_BY(mu_);
  SettlementLedger ledger_ ABSL_GUARDED_BY(mu_);
  Dispatcher dispatcher_ ABSL_GUARDED_BY(mu_);
  RoundScheduler scheduler_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingAck> acks_ ABSL_GUARDED_BY(mu_);
  size_t pending_ack_ids_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  Stats counters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_MANAGER_H_
