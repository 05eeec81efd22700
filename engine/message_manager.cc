#include "engine/message_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/log.h"

namespace msgq {

MessageManager::MessageManager(MessageTable table,
                               std::unique_ptr<MessageStore> store,
                               Clock* clock, JitterSource* jitter,
                               Options options)
    : table_(std::move(table)),
      store_(std::move(store)),
      clock_(clock),
      jitter_(jitter),
      options_(options),
      log_name_(
          absl::StrCat("table `", table_.keyspace, "`.`", table_.name, "`")),
      cache_(static_cast<size_t>(table_.settings.cache_size)) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  next_poll_at_ = now + table_.settings.poller_interval;
  next_purge_at_ = now;  // purge once at start, then every interval
  retry_delay_ = options_.retry_min;
}

MessageManager::~MessageManager() {
  Stop(absl::UnavailableError("message manager destroyed"));
}

void MessageManager::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

void MessageManager::Stop(absl::Status reason) {
  std::vector<SubscriberSlot> subscribers;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable() && subscribers_.empty() &&
        acks_.empty()) {
      return;
    }
    stopping_ = true;
    subscribers.swap(subscribers_);
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  std::vector<PendingAck> acks;
  {
    absl::MutexLock lock(&mu_);
    acks.swap(acks_);
  }
  for (PendingAck& ack : acks) {
    ack.done(absl::UnavailableError(
        absl::StrCat(log_name_, " is being reloaded or shut down: retry")));
  }
  for (SubscriberSlot& slot : subscribers) slot.subscriber->Close(reason);
}

absl::Status MessageManager::Subscribe(std::shared_ptr<Subscriber> subscriber) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return absl::UnavailableError(
          absl::StrCat(log_name_, " is being reloaded or shut down: retry"));
    }
    subscribers_.push_back(SubscriberSlot{std::move(subscriber), 0});
    if (subscribers_.size() == 1) {
      poll_requested_ = true;
      wake_.Signal();
    }
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
  return absl::OkStatus();
}

void MessageManager::Unsubscribe(const Subscriber* subscriber) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(subscribers_.begin(), subscribers_.end(),
                         [subscriber](const SubscriberSlot& s) {
                           return s.subscriber.get() == subscriber;
                         });
  if (it == subscribers_.end()) return;
  subscribers_.erase(it);
  if (next_subscriber_ >= subscribers_.size()) next_subscriber_ = 0;
}

void MessageManager::OnSendDone(const Subscriber* subscriber) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    FreeSlotLocked(subscriber);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
}

void MessageManager::FreeSlotLocked(const Subscriber* subscriber) {
  for (SubscriberSlot& slot : subscribers_) {
    if (slot.subscriber.get() == subscriber) {
      if (slot.outstanding > 0) --slot.outstanding;
      return;
    }
  }
}

void MessageManager::OnSendFailed(const Subscriber* subscriber,
                                  MessageBatch batch) {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    FreeSlotLocked(subscriber);
    counters_.sent -= static_cast<int64_t>(batch.size());
    for (Message& m : batch) {
      if (!cache_.IsInFlight(m.id) || acking_.contains(m.id)) continue;
      // Never delivered: no postpone is owed, and it may go out again now.
      to_postpone_.erase(m.id);
      cache_.ReleaseInFlight(m.id);
      if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
        more_due_ = true;  // still due in MySQL (or due after its postpone)
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
    } else if (!mysql_ok_ && clock_->Now() < retry_at_) {
      refused = absl::UnavailableError(
          absl::StrCat("MySQL is unavailable for ", log_name_, ": retry"));
    } else if (acks_.size() >= static_cast<size_t>(options_.max_pending_acks)) {
      refused = absl::ResourceExhaustedError(
          absl::StrCat("too many acks waiting for ", log_name_));
    } else {
      PendingAck ack{std::move(ids), std::move(done), {}};
      for (const std::string& id : ack.ids) {
        // Never send again what is being acked, and don't postpone it.
        cache_.MarkInFlight(id);
        ++acking_[id];
        auto p = to_postpone_.find(id);
        if (p != to_postpone_.end()) {
          ack.cancelled_postpones.emplace_back(p->first, p->second);
          to_postpone_.erase(p);
        }
      }
      acks_.push_back(std::move(ack));
      wake_.Signal();
      return;
    }
  }
  done(refused);
}

void MessageManager::NoteDueAt(int64_t time_next) {
  absl::MutexLock lock(&mu_);
  NoteDueAtLocked(time_next);
}

void MessageManager::NoteDueAtLocked(int64_t time_next) {
  if (!next_due_ns_.has_value() || time_next < *next_due_ns_) {
    next_due_ns_ = time_next;
    wake_.Signal();
  }
}

void MessageManager::RequestPoll() {
  absl::MutexLock lock(&mu_);
  poll_requested_ = true;
  wake_.Signal();
}

void MessageManager::OnRowChanges(const std::vector<RowChange>& changes) {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowNanos();
  bool fetch = false;
  for (const RowChange& c : changes) {
    if (c.deleted || c.time_acked.has_value() || !c.time_next.has_value()) {
      cache_.RemoveQueued(c.id);
      fetch_ids_.erase(c.id);
      refetch_.erase(c.id);
      continue;
    }
    if (cache_.IsInFlight(c.id)) continue;
    // Priority, schedule or payload may have changed: read it again.
    cache_.RemoveQueued(c.id);
    if (*c.time_next > now) {
      fetch_ids_.erase(c.id);
      NoteDueAtLocked(*c.time_next);
      continue;
    }
    if (subscribers_.empty()) continue;  // the first subscriber polls
    if (!options_.binlog_fetch_by_id) {
      poll_requested_ = true;
      fetch = true;
      continue;
    }
    if (cache_.full() ||
        fetch_ids_.size() >= static_cast<size_t>(table_.settings.cache_size)) {
      more_due_ = true;  // a backlog: the poll at drain picks it up
      continue;
    }
    fetch_ids_.insert(c.id);
    fetch = true;
  }
  if (fetch) wake_.Signal();
}

MessageManager::Stats MessageManager::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = counters_;
  s.subscribers = static_cast<int>(subscribers_.size());
  s.queued = static_cast<int64_t>(cache_.queued());
  s.in_flight = static_cast<int64_t>(cache_.in_flight());
  s.mysql_ok = mysql_ok_;
  return s;
}

MessageManager::Sends MessageManager::PumpLocked() {
  Sends sends;
  const size_t n = subscribers_.size();
  while (!cache_.empty() && n > 0) {
    size_t chosen = n;
    for (size_t i = 0; i < n; ++i) {
      size_t idx = (next_subscriber_ + i) % n;
      if (subscribers_[idx].outstanding < options_.max_batches_per_subscriber) {
        chosen = idx;
        break;
      }
    }
    if (chosen == n) break;  // everyone is busy
    MessageBatch batch =
        cache_.PopBatch(static_cast<size_t>(table_.settings.batch_size));
    for (const Message& m : batch) to_postpone_[m.id] = m.epoch;
    counters_.sent += static_cast<int64_t>(batch.size());
    SubscriberSlot& slot = subscribers_[chosen];
    ++slot.outstanding;
    sends.push_back(
        Send{slot.subscriber, slot.next_sequence++, std::move(batch)});
    next_subscriber_ = (chosen + 1) % n;
  }
  // Refill before the cache runs dry, so subscribers never wait on a poll.
  if (more_due_ && cache_.queued() <= cache_.capacity() / 2) {
    poll_requested_ = true;
  }
  if (!sends.empty() || poll_requested_) wake_.Signal();
  return sends;
}

void MessageManager::Deliver(Sends sends) {
  for (Send& send : sends) {
    send.subscriber->Send(send.sequence, std::move(send.batch));
  }
}

bool MessageManager::PollDueLocked(absl::Time now) const {
  if (subscribers_.empty() || cache_.full()) return false;
  if (poll_requested_ || now >= next_poll_at_) return true;
  return next_due_ns_.has_value() && absl::ToUnixNanos(now) >= *next_due_ns_;
}

bool MessageManager::FetchDueLocked(absl::Time now) const {
  if (subscribers_.empty() || cache_.full()) return false;
  return !fetch_ids_.empty() || (!refetch_.empty() && now >= refetch_at_);
}

bool MessageManager::HaveWorkLocked(absl::Time now) const {
  if (!mysql_ok_ && now < retry_at_) return false;
  if (!to_postpone_.empty() || !acks_.empty()) return true;
  if (FetchDueLocked(now)) return true;
  if (purge_more_ || now >= next_purge_at_) return true;
  return PollDueLocked(now);
}

absl::Time MessageManager::NextDeadlineLocked() const {
  if (!mysql_ok_ && clock_->Now() < retry_at_) return retry_at_;
  absl::Time deadline = next_purge_at_;
  if (!subscribers_.empty() && !cache_.full()) {
    deadline = std::min(deadline, next_poll_at_);
    if (next_due_ns_.has_value()) {
      deadline = std::min(deadline, absl::FromUnixNanos(*next_due_ns_));
    }
    if (!refetch_.empty()) deadline = std::min(deadline, refetch_at_);
  }
  return deadline;
}

MessageManager::Work MessageManager::TakeWorkLocked(absl::Time now) {
  Work work;
  work.now = absl::ToUnixNanos(now);
  work.writes.now = work.now;
  if (!mysql_ok_ && now < retry_at_) return work;
  if (!to_postpone_.empty()) {
    // One jitter per epoch per round, as one statement covers the round.
    absl::flat_hash_map<int64_t, int64_t> time_by_epoch;
    for (const auto& [id, epoch] : to_postpone_) {
      auto [it, inserted] = time_by_epoch.try_emplace(epoch, 0);
      if (inserted) {
        it->second = work.now + PostponeDelayNanos(table_.settings, epoch,
                                                   jitter_->Next());
      }
      work.writes.postpones.push_back(Postponement{id, it->second});
      work.postponed.emplace_back(id, epoch);
    }
    to_postpone_.clear();
  }
  if (!acks_.empty()) {
    work.acks.swap(acks_);
    for (const PendingAck& ack : work.acks) {
      work.writes.ack_groups.push_back(ack.ids);
    }
  }
  if (PollDueLocked(now)) {
    work.poll = true;
    // Queued and in-flight rows may come back from the poll and are skipped,
    // so ask for a full cache's worth.
    work.poll_limit = static_cast<int>(cache_.capacity() + cache_.in_flight());
    poll_requested_ = false;
    next_poll_at_ = now + table_.settings.poller_interval;
    if (next_due_ns_.has_value() && *next_due_ns_ <= work.now) {
      next_due_ns_.reset();
    }
    fetch_ids_.clear();  // the poll reads them, or marks a backlog
  } else if (FetchDueLocked(now)) {
    if (!refetch_.empty() && now >= refetch_at_) {
      for (const auto& [id, attempts] : refetch_) fetch_ids_.insert(id);
      refetch_at_ = absl::InfiniteFuture();
    }
    work.fetch_ids.assign(fetch_ids_.begin(), fetch_ids_.end());
    fetch_ids_.clear();
  }
  if (purge_more_ || now >= next_purge_at_) {
    work.purge = true;
    purge_more_ = false;
    next_purge_at_ = now + table_.settings.poller_interval;
  }
  return work;
}

void MessageManager::RunOnce() {
  Work work;
  {
    absl::MutexLock lock(&mu_);
    work = TakeWorkLocked(clock_->Now());
  }
  DoWork(std::move(work));
}

void MessageManager::Run() {
  while (true) {
    Work work;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_) {
        const absl::Time now = clock_->Now();
        if (HaveWorkLocked(now)) break;
        wake_.WaitWithTimeout(&mu_, NextDeadlineLocked() - now);
      }
      if (stopping_) break;
      work = TakeWorkLocked(clock_->Now());
    }
    DoWork(std::move(work));
  }
  // Flush what was sent or acked so a successor does not resend it at once.
  Work last;
  {
    absl::MutexLock lock(&mu_);
    if (!mysql_ok_) return;
    const absl::Time now = clock_->Now();
    last = TakeWorkLocked(now);
    last.poll = false;
    last.purge = false;
  }
  DoWrites(last);
}

void MessageManager::DoWork(Work work) {
  // When MySQL is unreachable the round ends: one failure per round sets the
  // backoff, and no further statement waits on a dead server.
  if (!DoWrites(work)) return;
  if (work.poll && !DoPoll(work)) return;
  if (!work.fetch_ids.empty() && !DoFetch(work)) return;
  if (work.purge) DoPurge(work);
}

void MessageManager::MysqlFailedLocked(const absl::Status& status) {
  if (mysql_ok_) {
    LogWarning(log_name_, ": MySQL unavailable, retrying with backoff: ",
               status.message());
    retry_delay_ = options_.retry_min;
  } else {
    retry_delay_ = std::min(retry_delay_ * 2, options_.retry_max);
  }
  mysql_ok_ = false;
  retry_at_ = clock_->Now() + retry_delay_;
  poll_requested_ = true;  // cover anything missed while away
}

void MessageManager::MysqlOkLocked() {
  if (!mysql_ok_) LogInfo(log_name_, ": MySQL is reachable again");
  mysql_ok_ = true;
  retry_delay_ = options_.retry_min;
}

void MessageManager::ReleaseIfSettledLocked(const std::string& id) {
  // An ack still to commit, or a newer send still owing its postpone, keeps
  // the id in flight; otherwise MySQL now holds its state.
  if (acking_.contains(id) || to_postpone_.contains(id)) return;
  cache_.ReleaseInFlight(id);
}

void MessageManager::ReleaseAckingLocked(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    auto it = acking_.find(id);
    if (it == acking_.end()) continue;
    if (--it->second == 0) {
      acking_.erase(it);
      ReleaseIfSettledLocked(id);
    }
  }
}

bool MessageManager::DoWrites(Work& work) {
  if (work.writes.postpones.empty() && work.writes.ack_groups.empty()) {
    return true;
  }
  absl::StatusOr<WriteResult> result = store_->Write(work.writes);
  std::vector<std::pair<AckCallback, absl::StatusOr<int64_t>>> replies;
  {
    absl::MutexLock lock(&mu_);
    if (result.ok()) {
      MysqlOkLocked();
      if (result->postpones.ok()) {
        std::optional<int64_t> earliest;
        for (const Postponement& p : work.writes.postpones) {
          ReleaseIfSettledLocked(p.id);
          if (!earliest.has_value() || p.time_next < *earliest) {
            earliest = p.time_next;
          }
        }
        if (earliest.has_value() &&
            (!next_due_ns_.has_value() || *earliest < *next_due_ns_)) {
          next_due_ns_ = earliest;
        }
      } else {
        LogError(log_name_, ": postpone failed: ", result->postpones.message());
        // Leave them due in MySQL: the next poll sends them again.
        for (const auto& [id, epoch] : work.postponed) {
          ReleaseIfSettledLocked(id);
        }
      }
      for (size_t i = 0; i < work.acks.size(); ++i) {
        absl::StatusOr<int64_t> n =
            i < result->acks.size() ? result->acks[i] : int64_t{0};
        if (n.ok()) {
          counters_.acked += *n;
          ReleaseAckingLocked(work.acks[i].ids);
          replies.emplace_back(std::move(work.acks[i].done), *n);
          continue;
        }
        // This group alone failed: its cancelled postpones are owed again.
        for (auto& [id, epoch] : work.acks[i].cancelled_postpones) {
          to_postpone_.try_emplace(id, epoch);
        }
        ReleaseAckingLocked(work.acks[i].ids);
        replies.emplace_back(
            std::move(work.acks[i].done),
            absl::Status(n.status().code(),
                         absl::StrCat("ack on ", log_name_,
                                      " failed: ", n.status().message())));
      }
    } else {
      const bool transient =
          IsUnavailable(result.status()) ||
          result.status().code() == absl::StatusCode::kAborted;
      if (IsUnavailable(result.status())) MysqlFailedLocked(result.status());
      if (transient) {
        // Still sent and still unsettled: postpone them next round.
        for (const auto& [id, epoch] : work.postponed) {
          to_postpone_.try_emplace(id, epoch);
        }
      } else {
        LogError(log_name_, ": write failed: ", result.status().message());
        // Leave them due in MySQL: the next poll sends them again.
        for (const auto& [id, epoch] : work.postponed) {
          ReleaseIfSettledLocked(id);
        }
      }
      for (PendingAck& ack : work.acks) {
        for (auto& [id, epoch] : ack.cancelled_postpones) {
          to_postpone_.try_emplace(id, epoch);
        }
        ReleaseAckingLocked(ack.ids);
        replies.emplace_back(
            std::move(ack.done),
            absl::Status(result.status().code(),
                         absl::StrCat("ack on ", log_name_,
                                      " failed: ", result.status().message())));
      }
    }
  }
  for (auto& [done, value] : replies) done(std::move(value));
  return !IsUnavailable(result.status());
}

bool MessageManager::DoPoll(const Work& work) {
  absl::StatusOr<std::vector<Message>> rows =
      store_->PollDue(work.now, work.poll_limit);
  std::optional<int64_t> next_due;
  bool need_next_due = false;
  {
    absl::MutexLock lock(&mu_);
    if (!rows.ok()) {
      if (IsUnavailable(rows.status())) {
        MysqlFailedLocked(rows.status());
      } else {
        LogError(log_name_, ": poll failed: ", rows.status().message());
      }
      return !IsUnavailable(rows.status());
    }
    MysqlOkLocked();
    ++counters_.polls;
    more_due_ = rows->size() >= static_cast<size_t>(work.poll_limit);
    AddToCacheLocked(*rows);
    need_next_due = !more_due_;
  }
  if (need_next_due) {
    absl::StatusOr<std::optional<int64_t>> due = store_->NextDueAfter(work.now);
    absl::MutexLock lock(&mu_);
    if (due.ok()) {
      next_due = *due;
      if (next_due.has_value() &&
          (!next_due_ns_.has_value() || *next_due < *next_due_ns_)) {
        next_due_ns_ = next_due;
      }
    } else if (IsUnavailable(due.status())) {
      MysqlFailedLocked(due.status());
    }
  }
  Sends sends;
  bool ok;
  {
    absl::MutexLock lock(&mu_);
    sends = PumpLocked();
    ok = mysql_ok_;
  }
  Deliver(std::move(sends));
  return ok;
}

void MessageManager::AddToCacheLocked(std::vector<Message>& rows) {
  for (Message& m : rows) {
    if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
      more_due_ = true;
      return;
    }
  }
}

bool MessageManager::DoFetch(const Work& work) {
  absl::StatusOr<std::vector<Message>> rows =
      store_->FetchDue(work.fetch_ids, work.now);
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    if (!rows.ok()) {
      if (IsUnavailable(rows.status())) {
        MysqlFailedLocked(rows.status());
        return false;
      }
      LogError(log_name_, ": fetch failed: ", rows.status().message());
      poll_requested_ = true;  // the poll finds them instead
      return true;
    }
    MysqlOkLocked();
    absl::flat_hash_set<std::string> found;
    for (const Message& m : *rows) found.insert(m.id);
    const absl::Time now = clock_->Now();
    for (const std::string& id : work.fetch_ids) {
      if (found.contains(id)) {
        refetch_.erase(id);
        continue;
      }
      // Not visible yet, or acked/rescheduled meanwhile: look again soon,
      // a few times; the poll remains the safety net.
      const int attempts = ++refetch_[id];
      if (attempts > options_.max_refetches) {
        refetch_.erase(id);
        continue;
      }
      refetch_at_ = std::min(
          refetch_at_, now + options_.refetch_delay * (1 << (attempts - 1)));
    }
    AddToCacheLocked(*rows);
    sends = PumpLocked();
  }
  Deliver(std::move(sends));
  return true;
}

void MessageManager::DoPurge(const Work& work) {
  const int64_t cutoff =
      work.now - absl::ToInt64Nanoseconds(table_.settings.purge_after);
  absl::StatusOr<int64_t> n = store_->Purge(cutoff, options_.purge_batch);
  absl::MutexLock lock(&mu_);
  if (!n.ok()) {
    if (IsUnavailable(n.status())) {
      MysqlFailedLocked(n.status());
    } else {
      LogError(log_name_, ": purge failed: ", n.status().message());
    }
    return;
  }
  MysqlOkLocked();
  if (*n >= options_.purge_batch) purge_more_ = true;
}

}  // namespace msgq
