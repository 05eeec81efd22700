// MessageManager's rounds of MySQL work: what a round takes under the lock,
// the statements it runs (writes, fetch, purge; the poll is in
// message_manager_poll.cc) and how their results settle the ledger, the
// scheduler and the cache. The class contract is in message_manager.h;
// message_manager.cc has its public API.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/log.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {
namespace {

using Outcome = SettlementLedger::Outcome;

}  // namespace

SettlementLedger::Outcome MessageManager::OutcomeOf(
    const absl::Status& status) {
  if (status.ok()) return Outcome::kCommitted;
  if (IsUnavailable(status) || status.code() == absl::StatusCode::kAborted) {
    return Outcome::kTransient;
  }
  return Outcome::kPermanent;
}

MessageManager::Work MessageManager::TakeWorkLocked() {
  Work work;
  work.now = clock_->NowNanos();
  work.mono = clock_->MonotonicNow();
  work.writes.now = work.now;
  if (scheduler_.Waiting(work.mono)) return work;
  work.postponed = ledger_.TakePostpones(PostponeCutoffLocked(work.mono));
  previous_take_ = work.mono;
  // One jitter per epoch per round, as one statement covers the round.
  absl::flat_hash_map<int64_t, int64_t> time_by_epoch;
  for (const auto& [id, epoch] : work.postponed) {
    auto [it, inserted] = time_by_epoch.try_emplace(epoch, 0);
    if (inserted) {
      it->second = work.now +
                   PostponeDelayNanos(table_.settings, epoch, jitter_->Next());
    }
    work.writes.postpones.push_back(Postponement{id, it->second});
  }
  if (!AckLaneLocked()) TakeAcksLocked(work);
  work.nacks.swap(nacks_);
  for (const PendingNack& p : work.nacks) {
    work.writes.nack_groups.push_back(p.group);
  }
  work.extends.swap(extends_);
  for (const PendingExtend& p : work.extends) {
    work.writes.extend_groups.push_back(p.group);
  }
  work.redrives.swap(redrives_);
  for (const PendingRedrive& p : work.redrives) {
    work.writes.redrive_groups.push_back(p.group);
  }
  work.dead_lists.swap(dead_lists_);
  work.round = scheduler_.Take(ViewLocked(), work.mono, work.now);
  return work;
}

bool MessageManager::GraceAppliesLocked() const {
  // Stopping or not owning: every postpone now (Flush; a handover waits
  // for Quiesced()).
  return postpone_grace_ > absl::ZeroDuration() && !stopping_ && OwnsLocked();
}

absl::Time MessageManager::PostponeCutoffLocked(absl::Time mono) const {
  if (GraceAppliesLocked()) return mono - postpone_grace_;
  // With row images most sends happen between rounds; like a send during a
  // round's read, each waits for the round after the next one to start,
  // which gives its ack a round's time to cancel the postpone (one row
  // update instead of two).
  if (options_.binlog_row_images && !stopping_ && OwnsLocked()) {
    return previous_take_;
  }
  return absl::InfiniteFuture();
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
  const bool ok = DoWrites(last, store_.get());
  DoDeadLists(last, ok);
  store_->EndRound();
}

void MessageManager::DoWork(Work work) {
  // Whatever happens, the round's connection goes back to the pool.
  struct EndRound {
    MessageStore* store;
    ~EndRound() { store->EndRound(); }
  } end_round{store_.get()};
  if (work.round.pump) {  // a rate limit's tokens came back
    Sends sends;
    {
      absl::MutexLock lock(&mu_);
      sends = PumpLocked();
    }
    Deliver(std::move(sends));
  }
  // Rows the binlog named are read first: the round's writes end with a
  // commit that waits for the disk (twice with sync_binlog=1), and a new
  // row waiting behind it took about twice as long from commit to receipt
  // (docs/benchmarks.md#latency-from-commit). A row whose write this
  // round still owes is in flight, so the read cannot send it again.
  const bool fetch_ok = work.round.fetch_ids.empty() || DoFetch(work);
  // The writes run whatever the fetch did: they settle what the round took
  // (acks answered, postpones owed again on failure). When MySQL is
  // unreachable the round then ends: one failure per round sets the backoff.
  const bool writes_ok = DoWrites(work, store_.get());
  DoDeadLists(work, writes_ok);
  if (!fetch_ok || !writes_ok) return;
  if (work.round.poll && !DoPoll(work)) return;
  if (work.round.purge) DoPurge(work);
  MaybeCountDead();
}

MessageManager::Log MessageManager::StatementFailedLocked(
    const char* what, const absl::Status& status) {
  if (IsUnavailable(status)) {
    const bool was_ok = scheduler_.MysqlFailed(clock_->MonotonicNow());
    if (!was_ok) return std::nullopt;
    return std::make_pair("W",
                          absl::StrCat(log_name_,
                                       ": MySQL unavailable, retrying with "
                                       "backoff: ",
                                       status.message()));
  }
  return std::make_pair(
      "E", absl::StrCat(log_name_, ": ", what, " failed: ", status.message()));
}

MessageManager::Log MessageManager::MysqlOkLocked() {
  if (!scheduler_.MysqlOk()) return std::nullopt;
  return std::make_pair("I",
                        absl::StrCat(log_name_, ": MySQL is reachable again"));
}

void MessageManager::Emit(Log log) const {
  if (log.has_value()) {
    LogTableLine(log->first, table_.keyspace, table_.name, log->second);
  }
}

bool MessageManager::DoWrites(Work& work, MessageStore* store) {
  if (work.writes.postpones.empty() && work.writes.ack_groups.empty() &&
      work.writes.nack_groups.empty() && work.writes.extend_groups.empty() &&
      work.writes.redrive_groups.empty()) {
    return true;
  }
  // Non-OK only when nothing was applied (connection lost, deadlock); else
  // the postpones and each ack group succeed or fail on their own.
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<WriteResult> result = store->Write(work.writes);
  const absl::Duration took = clock_->MonotonicNow() - start;
  std::vector<std::pair<AckCallback, absl::StatusOr<int64_t>>> replies;
  std::vector<std::function<void()>> group_replies;
  std::vector<Log> logs;
  {
    absl::MutexLock lock(&mu_);
    logs.push_back(result.ok()
                       ? MysqlOkLocked()
                       : StatementFailedLocked("write", result.status()));
    const absl::Status postpones =
        result.ok() ? result->postpones : result.status();
    if (result.ok() && !postpones.ok()) {
      // Left due in MySQL: the next poll sends them again.
      logs.push_back(StatementFailedLocked("postpone", postpones));
    }
    counters_.write_latency.Observe(took);
    LeftFlightLocked(
        ledger_.PostponesDone(work.postponed, OutcomeOf(postpones)));
    if (postpones.ok()) {
      counters_.postponed += static_cast<int64_t>(work.writes.postpones.size());
      std::optional<int64_t> earliest;
      for (const Postponement& p : work.writes.postpones) {
        earliest = std::min(earliest.value_or(p.time_next), p.time_next);
        own_postpones_.Put(p.id, p.time_next);
      }
      if (earliest.has_value()) scheduler_.NoteDueAt(*earliest);
    }
    for (size_t i = 0; i < work.acks.size(); ++i) {
      PendingAck& ack = work.acks[i];
      pending_ack_ids_ -= std::min(pending_ack_ids_, ack.ticket.ids.size());
      absl::StatusOr<int64_t> n =
          !result.ok()              ? absl::StatusOr<int64_t>(result.status())
          : i < result->acks.size() ? result->acks[i]
                                    : absl::StatusOr<int64_t>(int64_t{0});
      LeftFlightLocked(ledger_.AckDone(ack.ticket, OutcomeOf(n.status())));
      if (!n.ok()) {
        for (const std::string& id : ack.ticket.ids) own_acks_.Erase(id);
      }
      if (n.ok()) {
        counters_.acked += *n;
        replies.emplace_back(std::move(ack.done), *n);
      } else {
        replies.emplace_back(
            std::move(ack.done),
            absl::Status(n.status().code(),
                         absl::StrCat("ack on ", log_name_,
                                      " failed: ", n.status().message())));
      }
    }
    SettleGroupsLocked(result, work, group_replies, logs);
    // msgq_order_by: a settled message lets the next of its key be read.
    if (!table_.settings.order_by.empty() && result.ok() &&
        (!work.acks.empty() || !work.writes.nack_groups.empty() ||
         !work.writes.redrive_groups.empty())) {
      scheduler_.RequestPoll();
    }
  }
  for (Log& log : logs) Emit(std::move(log));
  for (auto& [done, value] : replies) done(std::move(value));
  for (auto& reply : group_replies) reply();
  return !IsUnavailable(result.status());
}

void MessageManager::AddToCacheLocked(std::vector<Message>& rows) {
  const int64_t now = clock_->NowNanos();
  // msgq's own deaths, one write group per reason.
  std::vector<PendingNack> deaths;
  for (Message& m : rows) {
    // MySQL may still show the state from before an unsettled write.
    if (ledger_.InFlight(m.id)) continue;
    // Due again (its ack wait ran out): no longer held (prefetch).
    dispatcher_.Release(m.id);
    if (std::optional<std::string> reason = DeathReasonLocked(m, now)) {
      auto it = std::find_if(
          deaths.begin(), deaths.end(),
          [&](const PendingNack& p) { return p.group.reason == *reason; });
      if (it == deaths.end()) {
        it = deaths.insert(deaths.end(), PendingNack());
        it->group.reason = *std::move(reason);
      }
      // The row's epoch as read is the check: nobody sent it since.
      it->group.nacks.push_back(msgq::Nack{m.id, m.epoch - 1, std::nullopt});
      it->ticket.ids.push_back(m.id);
      continue;
    }
    m.seen_at = binlog_seen_.Take(m.id).value_or(0);
    if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
      scheduler_.NoteBacklog();
      break;
    }
  }
  for (PendingNack& p : deaths) {
    p.ticket = ledger_.BeginHold(std::move(p.ticket.ids));
    nacks_.push_back(std::move(p));
  }
  if (!deaths.empty()) WakeLocked();
}

void MessageManager::DropStaleReadsLocked(std::vector<Message>& rows) {
  const int64_t now = clock_->NowNanos();
  NoteReadsLocked(rows, now);
  std::erase_if(rows, [&](const Message& m) {
    return left_while_reading_.contains(m.id) ||
           !binlog_expect_.Accept(m.id, m.priority, m.time_next, now);
  });
}

bool MessageManager::DoFetch(const Work& work) {
  {
    absl::MutexLock lock(&mu_);
    ReadStartsLocked();
  }
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<std::vector<Message>> rows =
      store_->FetchDue(work.round.fetch_ids, work.now);
  const absl::Duration took = clock_->MonotonicNow() - start;
  Sends sends;
  Log log;
  {
    absl::MutexLock lock(&mu_);
    counters_.fetch_latency.Observe(took);
    if (rows.ok()) DropStaleReadsLocked(*rows);
    ReadDoneLocked();
    if (!rows.ok()) {
      log = StatementFailedLocked("fetch", rows.status());
      // Whatever the reason, the poll finds them instead.
      scheduler_.FetchFailed();
    } else {
      log = MysqlOkLocked();
      ++counters_.fetches;
      absl::flat_hash_set<std::string> found;
      for (const Message& m : *rows) found.insert(m.id);
      for (const std::string& id : work.round.fetch_ids) {
        counters_.fetch_misses += found.contains(id) ? 0 : 1;
      }
      scheduler_.FetchDone(work.round.fetch_ids, found, clock_->MonotonicNow());
      AddToCacheLocked(*rows);
      sends = PumpLocked();
    }
  }
  Emit(std::move(log));
  Deliver(std::move(sends));
  return rows.ok() || !IsUnavailable(rows.status());
}

void MessageManager::DoPurge(const Work& work) {
  if (table_.purge_by_partition) {
    DoPartitionPurge(work);
    return;
  }
  const int64_t cutoff =
      work.now - absl::ToInt64Nanoseconds(table_.settings.purge_after);
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<int64_t> n = store_->Purge(cutoff, options_.purge_batch);
  const absl::Duration took = clock_->MonotonicNow() - start;
  Log log;
  {
    absl::MutexLock lock(&mu_);
    counters_.purge_latency.Observe(took);
    if (!n.ok()) {
      log = StatementFailedLocked("purge", n.status());
    } else {
      log = MysqlOkLocked();
      counters_.purged += *n;
      scheduler_.PurgeDone(*n >= options_.purge_batch);
    }
  }
  Emit(std::move(log));
  if (n.ok() || !IsUnavailable(n.status())) DoDeadPurge();
}

}  // namespace msgq
