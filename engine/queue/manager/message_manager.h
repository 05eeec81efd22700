// MessageManager: runs one message table as a queue.
//
// It keeps the table's MessageCache filled from MySQL (polls, and rows the
// binlog names), hands batches round-robin to subscribers, postpones every
// sent batch (redelivery with backoff), acks, and purges old acked rows. Its
// parts, each with one job:
//   MessageCache      the queued messages, best first;
//   RowReconciler     the race rules: the ids in flight and the write owed
//                     for each (its SettlementLedger), and whether a row
//                     read, shown by the binlog or handed back may be
//                     queued (row_reconciler.h);
//   Dispatcher        the subscribers and whose turn it is;
//   RoundScheduler    when to poll, fetch, purge and retry;
//   PendingRequests   the acks, nacks, extends, redrives and dead lists
//                     waiting for a round, and their bounds;
//   HeldBackWrites    the postpones and acks a row lock held back, and
//                     when they are retried;
//   FailurePolicy     which rows die, the death log's budget, when the dead
//                     are counted;
//   KeyGate           msgq_concurrency_by's slots per key;
//   PostponeTiming    when the postpones of sends are written;
//   ReadSizer, ImagePacer, PartitionLog: a read's rows within the cache's
//                     bytes, the pace of rows queued from row images, the
//                     partition purge's log lines;
// and the manager itself: the lock, the lifecycle, the rounds, MySQL
// health and the statements.
// All MySQL work runs in rounds, on a RoundExecutor's workers shared by
// every table (or, without one, on a thread of the manager's own), through
// a MessageStore, and is coalesced: whatever postpones and acks piled up while
// the previous statement ran go out together in one transaction. Sending is
// event driven and never waits for MySQL.
//
// Its code, by role: message_manager.cc, the public face (lifecycle,
// subscribers and sends, flow control, ownership, stats); _requests.cc,
// acks, nacks and extends taken in; _rounds.cc, the round runner (what a
// round takes and writes, the ack lane, MySQL health); _reads.cc, what a
// round reads (polls, fetches) and purges; _failures.cc, redrives, dead
// lists and how nacks and extends settle; _binlog.cc, binlog intake;
// _concurrency.cc, loading and using the KeyGate.
//
// Thread-safety: all public methods are thread-safe and never block on MySQL
// or on subscribers. One mutex guards the parts; it is never held while
// calling a Subscriber, the store, or writing a log line.
// Lifetime: Start() once, Stop() once before destruction.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_H_

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
#include "common/clock.h"
#include "common/monotonic_cond_var.h"
#include "engine/message_table.h"
#include "engine/queue/db_readings.h"
#include "engine/queue/dispatcher.h"
#include "engine/queue/manager/failure_policy.h"
#include "engine/queue/manager/held_back_writes.h"
#include "engine/queue/manager/image_pacer.h"
#include "engine/queue/manager/key_gate.h"
#include "engine/queue/manager/manager_options.h"
#include "engine/queue/manager/manager_round.h"
#include "engine/queue/manager/manager_stats.h"
#include "engine/queue/manager/partition_log.h"
#include "engine/queue/manager/pending_requests.h"
#include "engine/queue/manager/postpone_timing.h"
#include "engine/queue/manager/read_sizer.h"
#include "engine/queue/message_cache.h"
#include "engine/queue/message_store.h"
#include "engine/queue/rate_limiter.h"
#include "engine/queue/redelivery_backoff.h"
#include "engine/queue/round_executor.h"
#include "engine/queue/round_scheduler.h"
#include "engine/queue/row_change.h"
#include "engine/queue/row_reconciler.h"
#include "engine/queue/settlement_ledger.h"
#include "engine/queue/subscriber.h"

namespace msgq {

class MessageManager : private RoundExecutor::Task {
 public:
  // How it runs the table, what it counted (manager_options.h, _stats.h).
  using Options = ManagerOptions;
  using Stats = ManagerStats;
  // One delivery, and a nack of some (manager_round.h).
  using Delivery = ManagerDelivery;
  using NackRequest = ManagerNackRequest;

  using CountCallback = ManagerCountCallback;
  using NackCallback = ManagerNackCallback;
  using DeadCallback = ManagerDeadCallback;

  // `executor` runs the rounds; null: a thread of the manager's own.
  // `ack_store` (another connection to the same table), when given, takes
  // every ack: the ack lane, whose rounds (RunAckRound) the executor runs in
  // parallel with the table's. Without an executor only a test drives it.
  //
  // `clock`'s Now() is an estimate of MySQL's clock (DbClock). With
  // `readings` (the same clock's measurements; must outlive the manager)
  // no row is sent on the estimate alone: the reads judge due by MySQL's
  // clock (message_store.h); a row the binlog shows due by the estimate is
  // queued from its image or fetched only when its event's timestamp is at
  // or after its time_next, else a poll reads it; and a due time the
  // estimate reached (a scheduled row, a postpone's) polls only once a
  // reading taken after it was noted confirms it, which the manager asks
  // for then (RoundScheduler, docs/design/due-clock.md). Null: `clock` is
  // MySQL's own and its Now() confirms everything (unit tests).
  MessageManager(MessageTable table, std::unique_ptr<MessageStore> store,
                 Clock* clock, JitterSource* jitter, Options options,
                 std::shared_ptr<RoundExecutor> executor = nullptr,
                 std::unique_ptr<MessageStore> ack_store = nullptr,
                 DbReadings* readings = nullptr);
  ~MessageManager();
  MessageManager(const MessageManager&) = delete;
  MessageManager& operator=(const MessageManager&) = delete;

  // Starts running rounds (on the executor, or on a thread of its own).
  void Start();
  // Stops the thread (after flushing pending postpones and acks if MySQL is
  // reachable), fails waiting acks with UNAVAILABLE and closes every
  // subscriber with `reason`. Idempotent.
  //
  // Postpones and acks that another transaction's row lock holds back
  // (WriteResult::locked) are retried every Options::locked_retry, also
  // while MySQL is unreachable, and Stop() blocks until they commit or
  // until the ack wait of the last send they settle has run out,
  // whichever comes first: until then a successor would read those rows
  // due and send them inside that ack wait. After it they are given up
  // and logged (the messages are sent again, as any whose ack wait ran
  // out). So a caller that must not let two managers send a
  // table (Engine's reload and shutdown) starts the successor only after
  // Stop() returned.
  void Stop(absl::Status reason);
  // Once Stop() waited for writes a row lock holds back: until when it
  // could wait (monotonic; it returns soon after, or as soon as a write in
  // progress then ends). InfinitePast if it never did.
  absl::Time StopFence() const;

  // Adds a subscriber; the first one triggers an immediate poll.
  // With max_unacked > 0 (prefetch) it holds at most that many messages
  // unacked: its slot for a message frees when the message is acked (Ack
  // here, or the binlog shows it acked or deleted), nacked, read due again
  // (its ack wait ran out) or handed back (OnSendFailed); 0 = unlimited.
  // UNAVAILABLE when the manager is stopping.
  absl::Status Subscribe(std::shared_ptr<Subscriber> subscriber,
                         int max_unacked = 0);
  // Removes a subscriber; no Send reaches it after this returns... except one
  // already in progress on another thread. Messages it received and did not
  // ack come back after their time_next; batches it hands back with
  // OnSendFailed go to the others at once.
  void Unsubscribe(const Subscriber* subscriber);
  // A batch handed to `subscriber` was written: frees its slot.
  void OnSendDone(const Subscriber* subscriber);
  // A batch handed to `subscriber` was not written (its stream is ending):
  // the subscriber gets nothing more, and the messages go to the other
  // subscribers at once, unless an ack of them is under way or committed
  // (until the binlog shows it) or they are already due again in MySQL
  // (then the next poll sends them).
  void OnSendFailed(const Subscriber* subscriber, MessageBatch batch);

  // Acks `ids` (text form as streamed). `done` runs exactly once, on the
  // manager's thread or inline, with the number of rows that went from
  // unacked to acked, or: INVALID_ARGUMENT (malformed id, too many ids),
  // UNAVAILABLE (MySQL unreachable or manager stopping), RESOURCE_EXHAUSTED
  // (too many acks or acked ids waiting).
  void Ack(std::vector<std::string> ids, CountCallback done);

  // The calls below answer through `done` exactly once, on the manager's
  // thread or inline, with the errors of Ack (INVALID_ARGUMENT,
  // UNAVAILABLE, RESOURCE_EXHAUSTED) plus those named. Their writes go out
  // in the next round, after the postpones and acks taken with them.

  // Hands deliveries back: retried at now + delay (or the backoff of the
  // delivery's epoch), or dead (request.dead, msgq_max_attempts,
  // msgq_max_age). Only rows whose epoch is still the delivery's + 1
  // change. INVALID_ARGUMENT for a negative delay.
  void Nack(NackRequest request, NackCallback done);
  // Moves each delivery's time_next to now + duration (same epoch check).
  // INVALID_ARGUMENT for a duration <= 0 or above Options::max_extend.
  void Extend(std::vector<Delivery> deliveries, absl::Duration duration,
              CountCallback done);
  // Dead rows `ids` (or all) become due now with epoch 0.
  // INVALID_ARGUMENT when both or neither of ids and all are given.
  void Redrive(std::vector<std::string> ids, bool all, CountCallback done);
  // Dead rows with id > after_id, by id, at most `limit` (1..10000).
  void ListDead(std::string after_id, int limit, DeadCallback done);

  // Tells the manager a committed row is due at `time_next` (tests).
  void NoteDueAt(int64_t time_next);

  // Committed changes from the binlog: new or rescheduled rows that are due
  // are fetched by id in the next round (one statement for all of them),
  // future ones are scheduled, acked or deleted ones leave the cache. Rows
  // in flight are msgq's own postpones and acks and are left alone.
  void OnRowChanges(const std::vector<RowChange>& changes);

  // Polls in the next round (e.g. after the binlog stream restarted).
  void RequestPoll();

  // ---- Flow control ----
  // Pauses or resumes sending. A paused table sends nothing: its queued
  // messages are dropped (they stay due in MySQL), no poll or fetch reads
  // due rows, binlog-named rows are ignored; acks, nacks, extends, redrives
  // and the postpones of earlier sends still go out, so messages in flight
  // keep their ack wait. Resuming polls at once. Repeating the current
  // state changes nothing. The engine keeps the state in MySQL (Engine::
  // SetPaused); this is the manager's side only.
  void SetPaused(bool paused);

  // ---- Ownership (several instances; see engine/lease/lease_keeper.h) ----
  // Only an owner polls, fetches, purges and sends; any manager takes acks,
  // nacks, extends, redrives and dead lists, and writes the postpones of
  // its earlier sends.
  //
  // Grants ownership until `until` on the clock's monotonic time (the end of
  // the lease's local trust window); called again at each renewal to extend
  // it. Past `until` nothing is sent even if no Disown() came (a renewal
  // that hangs fences the manager by itself). When ownership was not held
  // (never granted, revoked or lapsed) the cache is emptied first, as
  // another instance may have sent its rows, and a poll is requested.
  //
  // `images_wait`: another instance may have sent rows of the table
  // recently (the grant takes it over). Row images are then used only for
  // changes after the position of the first read that starts after this
  // call (RowReconciler rule 6: the other instance's reads all started
  // before the grant); until that read ends, due changes are fetched by
  // id. False when nobody else can have written the table recently (the
  // lease was free or expired, or was this instance's own; the instance
  // lock taken with no other holder ever seen). Ignored while ownership
  // is held.
  void Own(absl::Time until, bool images_wait);
  // Revokes ownership now: nothing more is sent and the queued messages are
  // dropped (they stay due in MySQL for the next owner).
  void Disown();
  // No send waits for its postpone, and no ack a row lock held back waits
  // to replace one: after Disown() the lease may be handed over without
  // the next owner reading a row that was just sent as due.
  bool Quiesced() const;

  // One round of MySQL work at the clock's current time, synchronously:
  // pending writes, then a poll and a purge step if due; then, as at a
  // round's end, a reading of MySQL's clock is asked for if a due time
  // waits for one. Unit tests call it directly (without Start) with a fake
  // clock.
  void RunOnce();
  // One round of the ack lane (only with an ack store): writes the acks
  // waiting, unless MySQL is in its retry backoff. Returns when to run next
  // (InfiniteFuture: when woken). The executor calls it; unit tests too.
  absl::Time RunAckRound();

  Stats stats() const;
  const MessageTable& table() const { return table_; }

 private:
  // What a round takes under the lock (manager_round.h).
  using Work = ManagerRound;
  using Sends = std::vector<std::pair<Dispatcher::Pick, MessageBatch>>;
  // A line to log once the lock is released.
  using Log = std::optional<std::pair<const char*, std::string>>;

  // ---- The public face (message_manager.cc) ----
  // Hands queued messages to free subscribers; returns the sends to make
  // once the lock is released.
  Sends PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The batch of at most `max` queued messages for `pick`: the best ones,
  // less those the dispatcher redirects to another subscriber (and, with
  // msgq_concurrency_by, those the gate holds back). May be empty.
  MessageBatch PopForLocked(const Dispatcher::Pick& pick, size_t max,
                            int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(Sends sends);
  // Whether ownership is held now (see Own).
  bool OwnsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.AssertHeld();
    return clock_->MonotonicNow() < owned_until_;
  }

  // ---- Requests (message_manager_requests.cc) ----
  // Refuses a request (returns the error: UNAVAILABLE when stopping or
  // while MySQL is in its retry backoff, else PendingRequests::Admit's) or
  // admits `ids` more of them.
  absl::Status AdmitLocked(size_t ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- The round runner (message_manager_rounds.cc) ----
  // How a write's status settles the ledger: committed, transient
  // (UNAVAILABLE, ABORTED: nothing applied, retry) or permanent.
  static SettlementLedger::Outcome OutcomeOf(const absl::Status& status);
  // The GTID a write committed as, for the reconciler: "" when it wrote
  // nothing, nullopt when the server does not name GTIDs (or it failed).
  static std::optional<std::string> WriteGtid(
      const absl::StatusOr<WriteResult>& result);
  // The manager's own thread (no executor): rounds until stopped.
  void Run();
  // RoundExecutor::Task: one round if there is work; the next deadline.
  absl::Time RunRound() override;
  // Writes what is owed, without reading (stopping); not while MySQL is
  // in its retry backoff, nor (unless `unavailable_too`) after a failure.
  void Flush(bool unavailable_too = false);
  // Stop()'s retries of what a row lock holds back, after the last Flush:
  // until nothing is held back or HeldBackWrites::fence() has passed.
  void FlushHeldBack();
  // There may be work: wake the thread or queue a round.
  void WakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An ack is waiting: wake the ack lane, or the rounds without one.
  void WakeAcksLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the ack lane takes the acks (not when stopping: Flush does).
  bool AckLaneLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.AssertHeld();
    return ack_store_ != nullptr && !stopping_;
  }
  RoundScheduler::View ViewLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next deadline of the rounds (RoundScheduler::NextDeadline); asks
  // for a reading of MySQL's clock when a due time waits for one.
  absl::Time NextDeadlineLocked(const RoundScheduler::View& view,
                                absl::Time mono, int64_t wall)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A reading asked for was taken: a round looks again.
  void ReadingTaken();
  Work TakeWorkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the waiting acks into `work`'s writes, and those a row lock held
  // back when their retry is due (or stopping).
  void TakeAcksLocked(Work& work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles a round's postpones; a row lock's are held back for a retry.
  void SettlePostponesLocked(const absl::StatusOr<WriteResult>& result,
                             Work& work, std::vector<Log>& logs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoWork(Work work);
  // Each returns false when MySQL turned out to be unreachable. DoWrites
  // writes through `store` (the table's, or the ack lane's).
  bool DoWrites(Work& work, MessageStore* store);
  // Settles a round's acks; appends their replies to run once the lock is
  // released. A request is answered with the rows it acked; the ids a row
  // lock held back are acked later without a reply (locked_writes_).
  void SettleAcksLocked(const absl::StatusOr<WriteResult>& result, Work& work,
                        std::vector<std::function<void()>>& replies,
                        std::vector<Log>& logs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a failed statement; returns the line to log.
  Log StatementFailedLocked(const char* what, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Log MysqlOkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `log` as a line about this table (keyspace and table fields in
  // JSON; repeated warnings and errors rate-limited, common/log.h).
  void Emit(Log log) const;

  // ---- The round's reads (message_manager_reads.cc) ----
  bool DoPoll(const Work& work);
  // The poll's statements: PollDue, or with `by_ids` PollDueIds and
  // FetchDue of the ids not held, or with a `room` PollDueByKey.
  struct PollRead;
  absl::StatusOr<PollRead> ReadDue(const Work& work, int64_t limit, bool by_ids,
                                   const KeyRoom* room);
  bool DoFetch(const Work& work);
  // Queues rows read from MySQL (or a row image), skipping ids in flight;
  // rows that must die (too many sends, too old, too large) go to a death
  // write instead.
  void AddToCacheLocked(std::vector<Message>& rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoPurge(const Work& work);
  void DoPartitionPurge(const Work& work);  // purge_by_partition's step

  // ---- Failures (message_manager_failures.cc) ----
  // Settles a round's nacks, extends and redrives; appends replies to run
  // once the lock is released.
  void SettleGroupsLocked(const absl::StatusOr<WriteResult>& result, Work& work,
                          std::vector<std::function<void()>>& replies,
                          std::vector<Log>& logs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SettleNacksLocked(const absl::StatusOr<WriteResult>& result, Work& work,
                         std::vector<std::function<void()>>& replies,
                         std::vector<Log>& logs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers the round's dead-list requests (UNAVAILABLE without MySQL).
  void DoDeadLists(Work& work, bool mysql_ok);
  // Purges dead rows past msgq_dead_retention (a purge step).
  void DoDeadPurge();
  // Counts the dead rows when due (see its comment); every round.
  void MaybeCountDead();

  // ---- msgq_concurrency_by (message_manager_concurrency.cc) ----
  // Reads the rows in flight into the gate after ownership is gained;
  // false when that failed. GateFreedLocked(true): a poll reads the next
  // rows. GateOpen: the cache holds a message the gate lets go now; Pop:
  // a batch of at most `max` of those, each taking its slot.
  bool LoadGate(const Work& work);
  void GateFreedLocked(bool freed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GateOpenLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `pick`, when given: leaves the messages it redirects queued.
  MessageBatch PopGatedLocked(size_t max, int64_t now,
                              const Dispatcher::Pick* pick = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- Binlog intake (message_manager_binlog.cc) ----
  // Whether `c`'s own event says MySQL's clock reached its time_next (or
  // the manager has no readings: its clock is MySQL's).
  bool ConfirmedByEventLocked(const RowChange& c) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `c`'s row image (RowReconciler rule 6); false when the table
  // polls for it instead (msgq_concurrency_by; its event does not confirm
  // that it is due).
  bool QueueImageLocked(const RowChange& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A due change of `id` that is read again: fetched by id, or polled.
  void ReadAgainLocked(const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acts on the images deferred while reads ran, decided as they ended.
  void DeferredDecidedLocked(RowReconciler::Deferred deferred)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const MessageTable table_;
  const std::unique_ptr<MessageStore> store_;  // used by the work thread only
  Clock* const clock_;
  JitterSource* const jitter_;
  const Options options_;
  const std::shared_ptr<RoundExecutor> executor_;  // may be null
  // The ack lane's store; may be null.
  const std::unique_ptr<MessageStore> ack_store_;
  // The ack lane's task on the executor.
  CallbackTask ack_lane_{[this] { return RunAckRound(); }};
  // Readings of MySQL's clock (may be null), and the waiter it wakes.
  DbReadings* const readings_;
  class ReadingWaiter final : public DbReadings::Waiter {
   public:
    explicit ReadingWaiter(MessageManager* m) : manager_(m) {}
    void ReadingTaken() override { manager_->ReadingTaken(); }

   private:
    MessageManager* const manager_;
  };
  ReadingWaiter reading_waiter_{this};
  const std::string log_name_;

  mutable absl::Mutex mu_;
  MonotonicCondVar wake_;
  MessageCache cache_ ABSL_GUARDED_BY(mu_);
  // How many rows the next read may bring within the cache's bytes (the
  // store cuts a read at cache_max_bytes: engine_manager.cc).
  ReadSizer read_sizer_ ABSL_GUARDED_BY(mu_);
  // The ids in flight and whether a read, a binlog change or a hand-back
  // may be queued: every race rule is its (row_reconciler.h).
  RowReconciler reconciler_ ABSL_GUARDED_BY(mu_);
  Dispatcher dispatcher_ ABSL_GUARDED_BY(mu_);
  RoundScheduler scheduler_ ABSL_GUARDED_BY(mu_);
  // The acks, nacks, extends, redrives and dead lists waiting for a round.
  PendingRequests requests_ ABSL_GUARDED_BY(mu_);
  // Which rows die, the death log's budget, when to count the dead.
  FailurePolicy failures_ ABSL_GUARDED_BY(mu_);
  // What the partition purge steps logged (each line once).
  PartitionLog partition_log_ ABSL_GUARDED_BY(mu_);
  // Writes another transaction's row lock held back (WriteResult::locked),
  // until a retry commits them, and how long Stop() keeps retrying them.
  HeldBackWrites locked_writes_ ABSL_GUARDED_BY(mu_);
  // locked_writes_'s fence, once Stop() waited for it (StopFence()).
  absl::Time stop_fence_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // A reading was asked for and has not come yet.
  bool reading_requested_ ABSL_GUARDED_BY(mu_) = false;
  // msgq_rate_limit's token bucket; nullopt without one.
  std::optional<RateLimiter> limiter_ ABSL_GUARDED_BY(mu_);
  // msgq_concurrency_by's slots (off without it). Nothing is sent until
  // loaded (LoadGate) after ownership is gained.
  KeyGate gate_ ABSL_GUARDED_BY(mu_);
  // SetPaused(true): nothing is read due or sent.
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  // Ownership ends at this monotonic time (InfiniteFuture: not leased).
  absl::Time owned_until_ ABSL_GUARDED_BY(mu_);
  Stats counters_ ABSL_GUARDED_BY(mu_);
  // When rows queued from images are handed out.
  ImagePacer image_pacer_ ABSL_GUARDED_BY(mu_);
  // When the postpones of sends are written.
  PostponeTiming postpone_timing_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_MESSAGE_MANAGER_H_
