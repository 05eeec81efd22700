#include "engine/message_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/log.h"

namespace msgq {
namespace {

using Outcome = SettlementLedger::Outcome;

Outcome OutcomeOf(const absl::Status& status) {
  if (status.ok()) return Outcome::kCommitted;
  if (IsUnavailable(status) || status.code() == absl::StatusCode::kAborted) {
    return Outcome::kTransient;
  }
  return Outcome::kPermanent;
}

RoundScheduler::Options SchedulerOptions(const TableSettings& settings,
                                         const MessageManager::Options& o) {
  RoundScheduler::Options s;
  s.poll_interval = settings.poller_interval;
  s.refetch_delay = o.refetch_delay;
  s.max_refetches = o.max_refetches;
  s.retry_min = o.retry_min;
  s.retry_max = o.retry_max;
  s.max_fetch_ids = static_cast<size_t>(settings.cache_size);
  return s;
}

}  // namespace

MessageManager::MessageManager(MessageTable table,
                               std::unique_ptr<MessageStore> store,
                               Clock* clock, JitterSource* jitter,
                               Options options,
                               std::shared_ptr<RoundExecutor> executor)
    : table_(std::move(table)),
      store_(std::move(store)),
      clock_(clock),
      jitter_(jitter),
      options_(options),
      executor_(std::move(executor)),
      log_name_(
          absl::StrCat("table `", table_.keyspace, "`.`", table_.name, "`")),
      cache_(static_cast<size_t>(table_.settings.cache_size), table_.id_kind),
      dispatcher_(options.max_batches_per_subscriber),
      scheduler_(SchedulerOptions(table_.settings, options),
                 clock->MonotonicNow()) {}

MessageManager::~MessageManager() {
  Stop(absl::UnavailableError("message manager destroyed"));
}

void MessageManager::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  if (executor_ != nullptr) {
    executor_->Add(this);
  } else {
    thread_ = std::thread([this] { Run(); });
  }
}

void MessageManager::WakeLocked() {
  if (executor_ == nullptr) {
    wake_.Signal();
  } else if (started_) {
    executor_->Wake(this);
  }
}

void MessageManager::Stop(absl::Status reason) {
  std::vector<std::shared_ptr<Subscriber>> subscribers;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable() && dispatcher_.empty() &&
        acks_.empty()) {
      return;
    }
    stopping_ = true;
    subscribers = dispatcher_.TakeAll();
    wake_.SignalAll();
  }
  // Closing first lets streams hand back what they never wrote, so the
  // final flush does not postpone messages nobody received.
  for (auto& subscriber : subscribers) subscriber->Close(reason);
  if (thread_.joinable()) thread_.join();
  bool flush = false;
  {
    absl::MutexLock lock(&mu_);
    flush = executor_ != nullptr && started_;
    started_ = false;
  }
  if (flush) {
    executor_->Remove(this);  // waits for a round in progress
    Flush();
  }
  std::vector<PendingAck> acks;
  {
    absl::MutexLock lock(&mu_);
    acks.swap(acks_);
    pending_ack_ids_ = 0;
  }
  for (PendingAck& ack : acks) {
    ack.done(absl::UnavailableError(
        absl::StrCat(log_name_, " is being reloaded or shut down: retry")));
  }
}

absl::Status MessageManager::Subscribe(std::shared_ptr<Subscriber> subscriber) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return absl::UnavailableError(
          absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
    }
    if (dispatcher_.Add(std::move(subscriber))) {
      scheduler_.RequestPoll();
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
    const int64_t now = clock_->NowNanos();
    const int64_t ack_wait = absl::ToInt64Nanoseconds(table_.settings.ack_wait);
    for (Message& m : batch) {
      // Past the ack wait the row is due again in MySQL (or already sent
      // again): the poll owns it now.
      if (m.sent_at != 0 && now >= m.sent_at + ack_wait) continue;
      if (!ledger_.HandBack(m.id, nullptr)) continue;  // an ack settles it
      if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
        scheduler_.NoteBacklog();
      }
    }
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void MessageManager::Ack(std::vector<std::string> ids, AckCallback done) {
  if (ids.size() > static_cast<size_t>(options_.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many ids in one ack: ", ids.size(), " > ",
                     options_.max_ids_per_ack)));
    return;
  }
  for (std::string& id : ids) {
    absl::StatusOr<std::string> canonical = CanonicalId(table_.id_kind, id);
    if (!canonical.ok()) {
      done(canonical.status());
      return;
    }
    id = *std::move(canonical);
  }
  if (ids.empty()) {
    done(int64_t{0});
    return;
  }
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      refused = absl::UnavailableError(
          absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
    } else if (scheduler_.Waiting(clock_->MonotonicNow())) {
      refused = absl::UnavailableError(
          absl::StrCat("MySQL is unavailable for ", log_name_, ": retry"));
    } else if (acks_.size() >= static_cast<size_t>(options_.max_pending_acks) ||
               pending_ack_ids_ + ids.size() >
                   static_cast<size_t>(options_.max_pending_ack_ids)) {
      refused = absl::ResourceExhaustedError(
          absl::StrCat("too many acks waiting for ", log_name_));
    } else {
      // Never send again what is being acked, and don't postpone it.
      for (const std::string& id : ids) cache_.RemoveQueued(id);
      pending_ack_ids_ += ids.size();
      acks_.push_back(PendingAck{ledger_.BeginAck(std::move(ids)),
                                 std::move(done)});
      WakeLocked();
      return;
    }
  }
  done(refused);
}

void MessageManager::NoteDueAt(int64_t time_next) {
  absl::MutexLock lock(&mu_);
  scheduler_.NoteDueAt(time_next);
  WakeLocked();
}

void MessageManager::RequestPoll() {
  absl::MutexLock lock(&mu_);
  scheduler_.RequestPoll();
  WakeLocked();
}

void MessageManager::OnRowChanges(const std::vector<RowChange>& changes) {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowNanos();
  for (const RowChange& c : changes) {
    if (c.deleted || c.time_acked.has_value() || !c.time_next.has_value()) {
      cache_.RemoveQueued(c.id);
      scheduler_.ForgetFetch(c.id);
      continue;
    }
    // msgq's own postpones and acks of ids in flight: nothing new.
    if (ledger_.InFlight(c.id)) continue;
    // Priority, schedule or payload may have changed: read it again.
    cache_.RemoveQueued(c.id);
    if (*c.time_next > now) {
      scheduler_.ForgetFetch(c.id);
      scheduler_.NoteDueAt(*c.time_next);
      continue;
    }
    if (dispatcher_.empty()) continue;  // the first subscriber polls
    if (!options_.binlog_fetch_by_id) {
      scheduler_.RequestPoll();
    } else if (cache_.full()) {
      scheduler_.NoteBacklog();  // the poll at drain picks it up
    } else {
      scheduler_.NameForFetch(c.id);
    }
  }
  WakeLocked();
}

MessageManager::Stats MessageManager::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = counters_;
  s.subscribers = static_cast<int>(dispatcher_.size());
  s.queued = static_cast<int64_t>(cache_.queued());
  s.in_flight = static_cast<int64_t>(ledger_.in_flight());
  s.mysql_ok = scheduler_.mysql_ok();
  return s;
}

MessageManager::Sends MessageManager::PumpLocked() {
  Sends sends;
  const int64_t now = cache_.empty() ? 0 : clock_->NowNanos();
  while (!cache_.empty()) {
    std::optional<Dispatcher::Pick> pick = dispatcher_.Next();
    if (!pick.has_value()) break;  // everyone is busy
    MessageBatch batch =
        cache_.PopBatch(static_cast<size_t>(table_.settings.batch_size));
    for (Message& m : batch) {
      ledger_.Sent(m.id, m.epoch);
      m.sent_at = now;
    }
    counters_.sent += static_cast<int64_t>(batch.size());
    sends.emplace_back(*std::move(pick), std::move(batch));
  }
  // Refill before the cache runs dry, so subscribers never wait on a poll.
  scheduler_.CacheLevel(cache_.queued(), cache_.capacity());
  if (!sends.empty() || scheduler_.backlog()) WakeLocked();
  return sends;
}

void MessageManager::Deliver(Sends sends) {
  for (auto& [pick, batch] : sends) {
    pick.subscriber->Send(pick.sequence, std::move(batch));
  }
}

RoundScheduler::View MessageManager::ViewLocked() const {
  RoundScheduler::View view;
  view.subscribers = !dispatcher_.empty();
  view.cache_full = cache_.full();
  view.writes_pending = ledger_.HasOwed() || !acks_.empty();
  return view;
}

MessageManager::Work MessageManager::TakeWorkLocked() {
  Work work;
  work.now = clock_->NowNanos();
  work.mono = clock_->MonotonicNow();
  work.writes.now = work.now;
  if (scheduler_.Waiting(work.mono)) return work;
  work.postponed = ledger_.TakePostpones();
  // One jitter per epoch per round, as one statement covers the round.
  absl::flat_hash_map<int64_t, int64_t> time_by_epoch;
  for (const auto& [id, epoch] : work.postponed) {
    auto [it, inserted] = time_by_epoch.try_emplace(epoch, 0);
    if (inserted) {
      it->second = work.now + PostponeDelayNanos(table_.settings, epoch,
                                                 jitter_->Next());
    }
    work.writes.postpones.push_back(Postponement{id, it->second});
  }
  work.acks.swap(acks_);
  for (const PendingAck& ack : work.acks) {
    work.writes.ack_groups.push_back(ack.ticket.ids);
  }
  work.round = scheduler_.Take(ViewLocked(), work.mono, work.now);
  return work;
}

void MessageManager::RunOnce() {
  Work work;
  {
    absl::MutexLock lock(&mu_);
    work = TakeWorkLocked();
  }
  DoWork(std::move(work));
}

void MessageManager::Run() {
  while (true) {
    Work work;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_) {
        const absl::Time mono = clock_->MonotonicNow();
        const int64_t wall = clock_->NowNanos();
        const RoundScheduler::View view = ViewLocked();
        if (scheduler_.HaveWork(view, mono, wall)) break;
        wake_.WaitWithTimeout(&mu_,
                              scheduler_.NextDeadline(view, mono, wall) - mono);
      }
      if (stopping_) break;
      work = TakeWorkLocked();
    }
    DoWork(std::move(work));
  }
  Flush();
}

absl::Time MessageManager::RunRound() {
  Work work;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::InfiniteFuture();
    const absl::Time mono = clock_->MonotonicNow();
    const int64_t wall = clock_->NowNanos();
    const RoundScheduler::View view = ViewLocked();
    if (!scheduler_.HaveWork(view, mono, wall)) {
      return scheduler_.NextDeadline(view, mono, wall);
    }
    work = TakeWorkLocked();
  }
  DoWork(std::move(work));
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::InfiniteFuture();
  const absl::Time mono = clock_->MonotonicNow();
  const int64_t wall = clock_->NowNanos();
  const RoundScheduler::View view = ViewLocked();
  return scheduler_.HaveWork(view, mono, wall)
             ? mono
             : scheduler_.NextDeadline(view, mono, wall);
}

void MessageManager::Flush() {
  // What was sent or acked, so a successor does not resend it at once.
  Work last;
  {
    absl::MutexLock lock(&mu_);
    if (!scheduler_.mysql_ok()) return;
    last = TakeWorkLocked();
    last.round = RoundScheduler::Round();
  }
  DoWrites(last);
  store_->EndRound();
}

void MessageManager::DoWork(Work work) {
  // Whatever happens, the round's connection goes back to the pool.
  struct EndRound {
    MessageStore* store;
    ~EndRound() { store->EndRound(); }
  } end_round{store_.get()};
  // When MySQL is unreachable the round ends: one failure per round sets the
  // backoff, and no further statement waits on a dead server.
  if (!DoWrites(work)) return;
  if (work.round.poll && !DoPoll(work)) return;
  if (!work.round.fetch_ids.empty() && !DoFetch(work)) return;
  if (work.round.purge) DoPurge(work);
}

MessageManager::Log MessageManager::StatementFailedLocked(
    const char* what, const absl::Status& status) {
  if (IsUnavailable(status)) {
    const bool was_ok = scheduler_.MysqlFailed(clock_->MonotonicNow());
    if (!was_ok) return std::nullopt;
    return std::make_pair(
        "W", absl::StrCat(log_name_, ": MySQL unavailable, retrying with "
                          "backoff: ", status.message()));
  }
  return std::make_pair(
      "E", absl::StrCat(log_name_, ": ", what, " failed: ", status.message()));
}

MessageManager::Log MessageManager::MysqlOkLocked() {
  if (!scheduler_.MysqlOk()) return std::nullopt;
  return std::make_pair("I",
                        absl::StrCat(log_name_, ": MySQL is reachable again"));
}

void MessageManager::Emit(Log log) {
  if (log.has_value()) LogLine(log->first, log->second);
}

bool MessageManager::DoWrites(Work& work) {
  if (work.writes.postpones.empty() && work.writes.ack_groups.empty()) {
    return true;
  }
  // Non-OK only when nothing was applied (connection lost, deadlock); else
  // the postpones and each ack group succeed or fail on their own.
  absl::StatusOr<WriteResult> result = store_->Write(work.writes);
  std::vector<std::pair<AckCallback, absl::StatusOr<int64_t>>> replies;
  std::vector<Log> logs;
  {
    absl::MutexLock lock(&mu_);
    logs.push_back(result.ok() ? MysqlOkLocked()
                               : StatementFailedLocked("write", result.status()));
    const absl::Status postpones =
        result.ok() ? result->postpones : result.status();
    if (result.ok() && !postpones.ok()) {
      // Left due in MySQL: the next poll sends them again.
      logs.push_back(StatementFailedLocked("postpone", postpones));
    }
    ledger_.PostponesDone(work.postponed, OutcomeOf(postpones));
    if (postpones.ok()) {
      std::optional<int64_t> earliest;
      for (const Postponement& p : work.writes.postpones) {
        earliest = std::min(earliest.value_or(p.time_next), p.time_next);
      }
      if (earliest.has_value()) scheduler_.NoteDueAt(*earliest);
    }
    for (size_t i = 0; i < work.acks.size(); ++i) {
      PendingAck& ack = work.acks[i];
      pending_ack_ids_ -= std::min(pending_ack_ids_, ack.ticket.ids.size());
      absl::StatusOr<int64_t> n =
          !result.ok() ? absl::StatusOr<int64_t>(result.status())
          : i < result->acks.size() ? result->acks[i]
                                    : absl::StatusOr<int64_t>(int64_t{0});
      ledger_.AckDone(ack.ticket, OutcomeOf(n.status()));
      if (n.ok()) {
        counters_.acked += *n;
        replies.emplace_back(std::move(ack.done), *n);
      } else {
        replies.emplace_back(
            std::move(ack.done),
            absl::Status(n.status().code(),
                         absl::StrCat("ack on ", log_name_, " failed: ",
                                      n.status().message())));
      }
    }
  }
  for (Log& log : logs) Emit(std::move(log));
  for (auto& [done, value] : replies) done(std::move(value));
  return !IsUnavailable(result.status());
}

void MessageManager::AddToCacheLocked(std::vector<Message>& rows) {
  for (Message& m : rows) {
    // MySQL may still show the state from before an unsettled write.
    if (ledger_.InFlight(m.id)) continue;
    if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
      scheduler_.NoteBacklog();
      return;
    }
  }
}

bool MessageManager::DoPoll(const Work& work) {
  int64_t limit = 0;
  {
    absl::MutexLock lock(&mu_);
    // Due rows in flight or already queued come back too and are skipped.
    // Writes of this round have settled most in-flight ids by now, and
    // waiting acks are bounded; at most two cache sizes of rows are read
    // (memory stays bounded by configuration).
    const int64_t capacity = static_cast<int64_t>(cache_.capacity());
    limit = std::min(capacity + static_cast<int64_t>(ledger_.in_flight()),
                     2 * capacity);
  }
  const int64_t poll_limit = limit;
  absl::StatusOr<std::vector<Message>> rows =
      store_->PollDue(work.now, poll_limit);
  Log log;
  bool backlog = false;
  {
    absl::MutexLock lock(&mu_);
    if (!rows.ok()) {
      log = StatementFailedLocked("poll", rows.status());
    } else {
      log = MysqlOkLocked();
      ++counters_.polls;
      absl::flat_hash_set<std::string> found;
      if (scheduler_.fetch_waiting() > 0) {
        for (const Message& m : *rows) found.insert(m.id);
      }
      scheduler_.PollDone(
          work.round, static_cast<int64_t>(rows->size()) >= poll_limit, found);
      AddToCacheLocked(*rows);
      backlog = scheduler_.backlog();
    }
  }
  Emit(std::move(log));
  if (!rows.ok()) return !IsUnavailable(rows.status());
  if (!backlog) {
    absl::StatusOr<std::optional<int64_t>> due = store_->NextDueAfter(work.now);
    absl::MutexLock lock(&mu_);
    if (due.ok() && due->has_value()) scheduler_.NoteDueAt(**due);
    if (!due.ok()) log = StatementFailedLocked("next-due query", due.status());
  }
  Emit(std::move(log));
  Sends sends;
  bool ok;
  {
    absl::MutexLock lock(&mu_);
    sends = PumpLocked();
    ok = scheduler_.mysql_ok();
  }
  Deliver(std::move(sends));
  return ok;
}

bool MessageManager::DoFetch(const Work& work) {
  absl::StatusOr<std::vector<Message>> rows =
      store_->FetchDue(work.round.fetch_ids, work.now);
  Sends sends;
  Log log;
  {
    absl::MutexLock lock(&mu_);
    if (!rows.ok()) {
      log = StatementFailedLocked("fetch", rows.status());
      // Whatever the reason, the poll finds them instead.
      scheduler_.FetchFailed();
    } else {
      log = MysqlOkLocked();
      absl::flat_hash_set<std::string> found;
      for (const Message& m : *rows) found.insert(m.id);
      scheduler_.FetchDone(work.round.fetch_ids, found,
                           clock_->MonotonicNow());
      AddToCacheLocked(*rows);
      sends = PumpLocked();
    }
  }
  Emit(std::move(log));
  Deliver(std::move(sends));
  return rows.ok() || !IsUnavailable(rows.status());
}

void MessageManager::DoPurge(const Work& work) {
  const int64_t cutoff =
      work.now - absl::ToInt64Nanoseconds(table_.settings.purge_after);
  absl::StatusOr<int64_t> n = store_->Purge(cutoff, options_.purge_batch);
  Log log;
  {
    absl::MutexLock lock(&mu_);
    if (!n.ok()) {
      log = StatementFailedLocked("purge", n.status());
    } else {
      log = MysqlOkLocked();
      scheduler_.PurgeDone(*n >= options_.purge_batch);
    }
  }
  Emit(std::move(log));
}

}  // namespace msgq
