// MessageManager's public face: its lifecycle, subscribers and the sends
// to them, flow control, ownership and stats. The class contract is in
// message_manager.h, with where the rest of it is.
#include "engine/queue/manager/message_manager.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace msgq {
namespace {

RoundScheduler::Options SchedulerOptions(const MessageTable& table,
                                         const MessageManager::Options& o) {
  const TableSettings& settings = table.settings;
  RoundScheduler::Options s;
  s.poll_interval = settings.poller_interval;
  s.refetch_delay = o.refetch_delay;
  s.max_refetches = o.max_refetches;
  s.retry_min = o.retry_min;
  s.retry_max = o.retry_max;
  s.retry_jitter = o.retry_jitter;
  // Each table its own jitter sequence, the same one every run.
  s.seed =
      std::hash<std::string>()(absl::StrCat(table.keyspace, ".", table.name));
  s.max_fetch_ids = static_cast<size_t>(settings.cache_size);
  return s;
}

// How long the dispatcher keeps a hold at least: until the message is due
// again (ack wait and backoff, the backoff counted up to kMaxHeldBackoff)
// and a poll or two have read it.
constexpr absl::Duration kMaxHeldBackoff = absl::Minutes(5);
absl::Duration HoldHorizon(const TableSettings& settings) {
  return settings.ack_wait + std::min(settings.max_backoff, kMaxHeldBackoff) +
         2 * settings.poller_interval;
}

}  // namespace

MessageManager::MessageManager(MessageTable table,
                               std::unique_ptr<MessageStore> store,
                               Clock* clock, JitterSource* jitter,
                               Options options,
                               std::shared_ptr<RoundExecutor> executor,
                               std::unique_ptr<MessageStore> ack_store,
                               DbReadings* readings)
    : table_(std::move(table)),
      store_(std::move(store)),
      clock_(clock),
      jitter_(jitter),
      options_(options),
      executor_(std::move(executor)),
      ack_store_(std::move(ack_store)),
      readings_(readings),
      log_name_(
          absl::StrCat("table `", table_.keyspace, "`.`", table_.name, "`")),
      cache_(static_cast<size_t>(table_.settings.cache_size), table_.id_kind,
             /*fair=*/!table_.settings.fair_by.empty(),
             options.cache_max_bytes),
      read_sizer_(options.cache_max_bytes),
      reconciler_(options.binlog_row_images,
                  /*images_wait=*/options.image_wait > absl::ZeroDuration()),
      dispatcher_(options.max_batches_per_subscriber,
                  HoldHorizon(table_.settings)),
      scheduler_(SchedulerOptions(table_, options), clock->MonotonicNow()),
      requests_(static_cast<size_t>(options.max_pending_acks),
                static_cast<size_t>(options.max_pending_ack_ids)),
      failures_(table_.settings, options.max_message_bytes,
                options.death_log_lines_per_minute),
      partition_log_(log_name_),
      locked_writes_(options.locked_retry, table_.settings.ack_wait),
      gate_(table_.settings.concurrency),
      owned_until_(options.leased ? absl::InfinitePast()
                                  : absl::InfiniteFuture()),
      // The grace is at most a tenth of the table's ack wait.
      postpone_timing_(std::max(absl::ZeroDuration(),
                                std::min(options.postpone_grace,
                                         table_.settings.ack_wait / 10)),
                       options.binlog_row_images) {
  if (table_.settings.rate_limit > 0) {
    limiter_.emplace(table_.settings.rate_limit, table_.settings.rate_burst,
                     clock_->MonotonicNow());
  }
}

MessageManager::~MessageManager() {
  Stop(absl::UnavailableError("message manager destroyed"));
}

void MessageManager::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  if (executor_ != nullptr) {
    executor_->Add(this);
    if (ack_store_ != nullptr) executor_->Add(&ack_lane_);
  } else {
    thread_ = std::thread([this] { Run(); });
  }
}

void MessageManager::Stop(absl::Status reason) {
  std::vector<std::shared_ptr<Subscriber>> subscribers;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable() && dispatcher_.empty() &&
        requests_.empty()) {
      return;
    }
    stopping_ = true;
    subscribers = dispatcher_.TakeAll();
    wake_.SignalAll();
  }
  // No reading is asked for once stopping: none wakes this manager after.
  if (readings_ != nullptr) readings_->Cancel(&reading_waiter_);
  // Closing first lets streams hand back what they never wrote, so the
  // final flush does not postpone messages nobody received.
  for (auto& subscriber : subscribers) subscriber->Close(reason);
  const bool ran_thread = thread_.joinable();
  if (ran_thread) thread_.join();  // its last round flushed
  bool flush = false;
  {
    absl::MutexLock lock(&mu_);
    flush = executor_ != nullptr && started_;
    started_ = false;
  }
  if (flush) {
    // Each waits for a round in progress; Flush then writes every ack.
    if (ack_store_ != nullptr) executor_->Remove(&ack_lane_);
    executor_->Remove(this);
    Flush();
  }
  if (ran_thread || flush) FlushHeldBack();
  Work left;
  size_t held_back = 0;  // writes a row lock still holds back
  {
    absl::MutexLock lock(&mu_);
    held_back = locked_writes_.GiveUp();
    left = requests_.TakeAll();
  }
  const absl::Status stopped = absl::UnavailableError(
      absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
  PendingRequests::Answer(left, stopped);
  if (held_back > 0) {
    LogTableLine("W", table_.keyspace, table_.name,
                 absl::StrCat(log_name_, ": ", held_back,
                              " postpones and acks of rows another "
                              "transaction kept locked were not written "
                              "before the ack wait of their sends ran out: "
                              "those messages will be sent again"));
  }
}

void MessageManager::FlushHeldBack() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time mono = clock_->MonotonicNow();
      if (locked_writes_.empty() || mono >= locked_writes_.fence()) return;
      stop_fence_ = locked_writes_.fence();
      // The retry time of what is held back, after MySQL's retry backoff.
      absl::Time retry_at = std::min(locked_writes_.postpones_retry_at(),
                                     locked_writes_.acks_retry_at());
      if (scheduler_.Waiting(mono)) {
        retry_at = std::max(
            retry_at,
            scheduler_.NextDeadline(ViewLocked(), mono, clock_->NowNanos()));
      }
      retry_at = std::min(retry_at, locked_writes_.fence());
      // A timed wait: nothing signals the time it waits for.
      if (mono < retry_at) {
        wake_.WaitFor(&mu_, retry_at - mono);
        continue;
      }
    }
    Flush(/*unavailable_too=*/true);
  }
}

absl::Status MessageManager::Subscribe(std::shared_ptr<Subscriber> subscriber,
                                       int max_unacked) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return absl::UnavailableError(
          absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
    }
    if (dispatcher_.Add(std::move(subscriber), max_unacked)) {
      scheduler_.RequestPoll();
      failures_.CountSoon(/*dead_list=*/false);  // count with that poll
      WakeLocked();
    }
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
  return absl::OkStatus();
}

void MessageManager::Unsubscribe(const Subscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  dispatcher_.Remove(subscriber);
}

void MessageManager::OnSendDone(const Subscriber* subscriber) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    dispatcher_.SendDone(subscriber);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void MessageManager::OnSendFailed(const Subscriber* subscriber,
                                  MessageBatch batch) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    // Never offer a failing stream another batch (it would fail again).
    dispatcher_.SendFailed(subscriber);
    counters_.sent -= static_cast<int64_t>(batch.size());
    for (const Message& m : batch) counters_.redelivered -= m.epoch > 0;
    const int64_t now = clock_->NowNanos();
    const int64_t ack_wait = absl::ToInt64Nanoseconds(table_.settings.ack_wait);
    bool gate_freed = false;  // never written: not in flight
    for (Message& m : batch) {
      gate_freed |= gate_.Release(m.id);
      if (!reconciler_.HandBack(m, now, ack_wait)) continue;
      if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
        scheduler_.NoteBacklog();
      }
    }
    GateFreedLocked(gate_freed);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void MessageManager::NoteDueAt(int64_t time_next) {
  absl::MutexLock lock(&mu_);
  scheduler_.NoteDueAt(time_next, clock_->MonotonicNow());
  WakeLocked();
}

void MessageManager::RequestPoll() {
  absl::MutexLock lock(&mu_);
  scheduler_.RequestPoll();
  WakeLocked();
}

void MessageManager::SetPaused(bool paused) {
  absl::MutexLock lock(&mu_);
  if (paused_ == paused) return;
  paused_ = paused;
  // Paused: what is queued stays due in MySQL. Resumed: rows queued by a
  // poll that ran across the pause may be stale; read the table afresh.
  cache_.Clear();
  if (!paused) scheduler_.RequestPoll();
  WakeLocked();
}

void MessageManager::Own(absl::Time until, bool images_wait) {
  absl::MutexLock lock(&mu_);
  if (!OwnsLocked()) {
    // Rows queued before (or read while not owning) may have been sent by
    // another owner since: read the table afresh.
    cache_.Clear();
    scheduler_.RequestPoll();
    if (images_wait) reconciler_.ImagesWait();
    // Another instance may have sent rows: count them before sending (our
    // own slots stay, they may still be out).
    gate_.OwnershipGained();
  }
  owned_until_ = until;
  WakeLocked();
}

void MessageManager::Disown() {
  absl::MutexLock lock(&mu_);
  owned_until_ = absl::InfinitePast();
  cache_.Clear();
}

bool MessageManager::Quiesced() const {
  absl::MutexLock lock(&mu_);
  if (reconciler_.PostponesPending()) return false;
  // A held-back ack that cancelled its row's postpone leaves the row due
  // in MySQL until it commits.
  return !locked_writes_.AckCancelledPostpone();
}

absl::Time MessageManager::StopFence() const {
  absl::MutexLock lock(&mu_);
  return stop_fence_;
}

MessageManager::Stats MessageManager::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = counters_;
  s.subscribers = static_cast<int>(dispatcher_.size());
  s.queued = static_cast<int64_t>(cache_.queued());
  s.in_flight = static_cast<int64_t>(reconciler_.in_flight());
  s.locked_rows_waiting = static_cast<int64_t>(locked_writes_.rows());
  s.mysql_ok = scheduler_.mysql_ok();
  s.owner = OwnsLocked();
  s.paused = paused_;
  if (gate_.on()) {
    s.keys_at_limit = gate_.KeysAtLimit(clock_->NowNanos());
  }
  return s;
}

MessageManager::Sends MessageManager::PumpLocked() {
  mu_.AssertHeld();
  Sends sends;
  if (!OwnsLocked()) {
    cache_.Clear();  // another instance sends these now
    return sends;
  }
  if (paused_ || !gate_.ready()) return sends;
  const int64_t now = cache_.empty() ? 0 : clock_->NowNanos();
  const absl::Time mono = clock_->MonotonicNow();
  dispatcher_.Sweep(mono);
  size_t returned = 0;  // picks given back with nothing to send
  // msgq_rate_limit: the messages that may go now.
  size_t tokens = Dispatcher::kUnlimited;
  if (limiter_.has_value() && !cache_.empty()) {
    tokens = limiter_->Available(mono);
  }
  while (!cache_.empty()) {
    if (tokens == 0) {  // a round sends more when the next token is there
      scheduler_.WakeAt(limiter_->NextToken(mono));
      break;
    }
    if (gate_.on() && !GateOpenLocked(now)) break;  // keys at limit
    std::optional<Dispatcher::Pick> pick = dispatcher_.Next();
    if (!pick.has_value()) break;  // everyone is busy
    const size_t max = std::min(
        {static_cast<size_t>(table_.settings.batch_size), pick->room, tokens});
    MessageBatch batch = PopForLocked(*pick, max, now);
    if (batch.empty()) {
      // What is queued waits for other subscribers (or the gate): give
      // the turn on, at most once per subscriber.
      dispatcher_.Return(*pick);
      if (++returned >= dispatcher_.size()) break;
      continue;
    }
    if (limiter_.has_value()) {
      limiter_->Take(batch.size());
      tokens -= batch.size();
    }
    dispatcher_.Hold(pick->subscriber.get(), batch);
    for (Message& m : batch) {
      reconciler_.Sent(m.id, m.epoch, mono);
      m.sent_at = now;
      counters_.redelivered += m.epoch > 0;
      if (m.time_next > 0 && now >= m.time_next) {
        counters_.send_delay.Observe(absl::Nanoseconds(now - m.time_next));
      }
      if (m.seen_at > 0) {
        counters_.commit_to_send.Observe(
            absl::Nanoseconds(std::max<int64_t>(0, now - m.seen_at)));
        m.seen_at = 0;  // the first handoff only
      }
    }
    counters_.sent += static_cast<int64_t>(batch.size());
    sends.emplace_back(*std::move(pick), std::move(batch));
  }
  // Refill before the cache runs dry, so subscribers never wait on a poll.
  scheduler_.CacheLevel(cache_.queued(), cache_.capacity());
  if (!sends.empty() || scheduler_.backlog()) WakeLocked();
  return sends;
}

MessageBatch MessageManager::PopForLocked(const Dispatcher::Pick& pick,
                                          size_t max, int64_t now) {
  mu_.AssertHeld();
  if (gate_.on()) return PopGatedLocked(max, now, &pick);
  if (!pick.redirect) return cache_.PopBatch(max, options_.max_batch_bytes);
  return cache_.PopAdmitted(max, options_.max_batch_bytes,
                            [this, &pick](const Message& m) {
                              return !dispatcher_.Redirects(pick, m.id);
                            });
}

void MessageManager::Deliver(Sends sends) {
  for (auto& [pick, batch] : sends) {
    pick.subscriber->Send(pick.sequence, std::move(batch));
  }
}

}  // namespace msgq
