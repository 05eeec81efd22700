// MessageManager's round runner: when a round runs (its own thread, or a
// RoundExecutor's), what it takes under the lock (postpones owed, requests
// waiting), the order of its statements (fetch, writes, poll, purge; the
// reads are in message_manager_reads.cc), how the writes' results settle
// the RowReconciler, the scheduler and the requests, and MySQL's health.
// The class contract is in message_manager.h.
//
// The ack lane: with an ack store, acks are written on a connection of
// their own, in rounds that run in parallel with the table's round (polls,
// fetches, postpones, nacks, purges). In a drain the acks were about half
// of the one connection's time
// (docs/benchmarks.md#where-the-drains-time-goes). What keeps it safe:
// - An ack and a postpone of the same id may now commit in either order.
//   Both statements change only unacked rows, so an ack that commits first
//   leaves a later postpone nothing to change, and one that commits second
//   acks the postponed row.
// - A poll or fetch of the table's round may read a row before an ack of
//   the lane commits and see the result after the ack settled (the id left
//   flight). Such a read must not queue it: the reconciler drops ids that
//   leave flight while a read runs from that read (its rule 2).
// - While MySQL is in its retry backoff the lane waits for its end, like
//   the table's round. Stop() removes the lane from the executor before the
//   final Flush, which writes the acks still waiting.
//
// Rows another transaction keeps locked (an application's SELECT ... FOR
// UPDATE; docs/design/locked-rows.md): the store leaves out what names
// them and reports them (WriteResult::locked), so the rest of the round's
// writes commit. A postpone so held back stays being written: the row
// stays in flight, and nothing sends it again, until a retry commits it.
// An ack request is answered with the rows it acked; its locked ids are
// acked later with no reply. Both are retried Options::locked_retry after
// they were held back (the ack lane retries the acks), with
// WriteBatch::expect_locked so that the store looks for the locks instead
// of waiting for them, and until they commit or fail for good.
//
// Stopping (a reload, a shutdown) keeps retrying them the same way after
// the last Flush, through MySQL outages too, and Stop() returns only when
// they committed or when the ack wait of the sends they settle has run out
// (HeldBackWrites::fence()): a successor (the reload's next manager, or whoever
// takes the table after this msgqd) reads such a row due in MySQL and
// would send it again at once, inside the ack wait of a send still being
// processed. Past the fence a send again is the ordinary redelivery; the
// writes are given up and logged.
#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {
namespace {

using Outcome = SettlementLedger::Outcome;

}  // namespace

std::optional<std::string> MessageManager::WriteGtid(
    const absl::StatusOr<WriteResult>& result) {
  if (!result.ok() || !result->gtid_known) return std::nullopt;
  return result->gtid;
}

SettlementLedger::Outcome MessageManager::OutcomeOf(
    const absl::Status& status) {
  if (status.ok()) return Outcome::kCommitted;
  if (IsUnavailable(status) || status.code() == absl::StatusCode::kAborted) {
    return Outcome::kTransient;
  }
  return Outcome::kPermanent;
}

void MessageManager::WakeLocked() {
  mu_.AssertHeld();
  if (executor_ == nullptr) {
    wake_.Signal();
  } else if (started_) {
    executor_->Wake(this);
  }
}

void MessageManager::WakeAcksLocked() {
  mu_.AssertHeld();
  if (!AckLaneLocked()) {
    WakeLocked();
  } else if (executor_ != nullptr && started_) {
    executor_->Wake(&ack_lane_);
  }
}

RoundScheduler::View MessageManager::ViewLocked() const {
  mu_.AssertHeld();
  RoundScheduler::View view;
  // A paused table reads nothing due, as if nobody subscribed.
  view.subscribers = !dispatcher_.empty() && !paused_;
  view.cache_full = cache_.full();
  // The requests the table's round takes (not the ack lane's acks).
  view.writes_pending = requests_.others_waiting() ||
                        (requests_.acks_waiting() && !AckLaneLocked());
  if (reconciler_.HasOwed()) {
    // Stopping or not owning: every postpone now (Flush; a handover waits
    // for Quiesced()).
    view.postpones_due_at = postpone_timing_.DueAt(
        reconciler_.OldestOwedAt(), /*all=*/stopping_ || !OwnsLocked());
  }
  view.locked_retry_at = locked_writes_.postpones_retry_at();
  if (!AckLaneLocked()) {
    view.locked_retry_at =
        std::min(view.locked_retry_at, locked_writes_.acks_retry_at());
  }
  view.owner = OwnsLocked();
  if (readings_ != nullptr) {
    const std::optional<DbReadings::Reading> r = readings_->Last();
    view.reading_ns = r.has_value() ? r->db_ns : INT64_MIN;
    view.reading_sent = r.has_value() ? r->sent : absl::InfinitePast();
  }
  return view;
}

absl::Time MessageManager::NextDeadlineLocked(const RoundScheduler::View& view,
                                              absl::Time mono, int64_t wall) {
  mu_.AssertHeld();
  if (readings_ != nullptr && !stopping_ && !reading_requested_ &&
      !scheduler_.Waiting(mono) && scheduler_.NeedsReading(view, wall)) {
    // Batched: every due time waiting now is confirmed by this one.
    reading_requested_ = true;
    ++counters_.readings_requested;
    readings_->Request(&reading_waiter_);
  }
  return scheduler_.NextDeadline(view, mono, wall);
}

void MessageManager::ReadingTaken() {
  absl::MutexLock lock(&mu_);
  reading_requested_ = false;
  WakeLocked();
}

MessageManager::Work MessageManager::TakeWorkLocked() {
  mu_.AssertHeld();
  Work work;
  work.now = clock_->NowNanos();
  work.mono = clock_->MonotonicNow();
  work.writes.now = work.now;
  if (scheduler_.Waiting(work.mono)) return work;
  work.postponed = reconciler_.TakePostpones(
      postpone_timing_.Cutoff(work.mono, /*all=*/stopping_ || !OwnsLocked()));
  work.first_retried = work.postponed.size();
  std::vector<SettlementLedger::Postpone> retried =
      locked_writes_.TakePostpones(work.mono, /*all=*/stopping_);
  if (!retried.empty()) {
    // Still being written: the ledger took them before.
    work.postponed.insert(work.postponed.end(),
                          std::make_move_iterator(retried.begin()),
                          std::make_move_iterator(retried.end()));
    work.writes.expect_locked = true;
  }
  postpone_timing_.Took(work.mono);
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
  requests_.TakeOthers(work);
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
  // As a round's end does: ask for a reading if a due time waits for one.
  absl::MutexLock lock(&mu_);
  NextDeadlineLocked(ViewLocked(), clock_->MonotonicNow(), clock_->NowNanos());
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
        wake_.WaitFor(&mu_, NextDeadlineLocked(view, mono, wall) - mono);
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
      return NextDeadlineLocked(view, mono, wall);
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
             : NextDeadlineLocked(view, mono, wall);
}

void MessageManager::TakeAcksLocked(Work& work) {
  mu_.AssertHeld();
  requests_.TakeAcks(work);
  for (const PendingAck& ack : work.acks) {
    reconciler_.AcksWriting(ack.ticket.ids);
  }
  std::vector<PendingAck> retried =
      locked_writes_.TakeAcks(work.mono, /*all=*/stopping_);
  if (retried.empty()) return;
  for (PendingAck& ack : retried) {
    work.writes.ack_groups.push_back(ack.ticket.ids);
    work.acks.push_back(std::move(ack));
  }
  work.writes.expect_locked = true;
}

absl::Time MessageManager::RunAckRound() {
  Work work;
  {
    absl::MutexLock lock(&mu_);
    if (!AckLaneLocked()) return absl::InfiniteFuture();
    work.mono = clock_->MonotonicNow();
    if (!requests_.acks_waiting() &&
        work.mono < locked_writes_.acks_retry_at()) {
      return locked_writes_.acks_retry_at();
    }
    if (scheduler_.Waiting(work.mono)) {
      return scheduler_.NextDeadline(ViewLocked(), work.mono,
                                     clock_->NowNanos());
    }
    work.now = clock_->NowNanos();
    work.writes.now = work.now;
    TakeAcksLocked(work);
  }
  DoWrites(work, ack_store_.get());
  ack_store_->EndRound();  // an idle lane holds no connection
  absl::MutexLock lock(&mu_);
  // msgq_order_by: a settled head lets the table's round read the next;
  // msgq_concurrency_by: an acked row leaves the key's next rows to read.
  if (!table_.settings.order_by.empty()) WakeLocked();
  if (gate_.on()) GateFreedLocked(true);
  if (!AckLaneLocked()) return absl::InfiniteFuture();
  if (requests_.acks_waiting()) return clock_->MonotonicNow();
  return locked_writes_.acks_retry_at();
}

void MessageManager::Flush(bool unavailable_too) {
  // What was sent or acked, so a successor does not resend it at once.
  Work last;
  {
    absl::MutexLock lock(&mu_);
    if (!unavailable_too && !scheduler_.mysql_ok()) return;
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
  mu_.AssertHeld();
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
  mu_.AssertHeld();
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
  std::vector<std::function<void()>> replies;
  std::vector<std::function<void()>> group_replies;
  std::vector<Log> logs;
  {
    absl::MutexLock lock(&mu_);
    logs.push_back(result.ok()
                       ? MysqlOkLocked()
                       : StatementFailedLocked("write", result.status()));
    counters_.write_latency.Observe(took);
    SettlePostponesLocked(result, work, logs);
    SettleAcksLocked(result, work, replies, logs);
    SettleGroupsLocked(result, work, group_replies, logs);
    if (result.ok()) {
      // Locked rows only a nack, extend or redrive named: those failed
      // (ABORTED), nothing of them is held back.
      for (const std::string& id : result->locked) {
        counters_.locked_rows += locked_writes_.RowWaiting(id) ? 0 : 1;
      }
    }
    // msgq_order_by: a settled message lets the next of its key be read.
    if ((!table_.settings.order_by.empty() || gate_.on()) && result.ok() &&
        (!work.acks.empty() || !work.writes.nack_groups.empty() ||
         !work.writes.redrive_groups.empty())) {
      scheduler_.RequestPoll();
    }
  }
  for (Log& log : logs) Emit(std::move(log));
  for (auto& reply : replies) reply();
  for (auto& reply : group_replies) reply();
  return !IsUnavailable(result.status());
}

void MessageManager::SettlePostponesLocked(
    const absl::StatusOr<WriteResult>& result, Work& work,
    std::vector<Log>& logs) {
  mu_.AssertHeld();
  const absl::Status postpones =
      result.ok() ? result->postpones : result.status();
  if (result.ok() && !postpones.ok()) {
    // Left due in MySQL: the next poll sends them again.
    logs.push_back(StatementFailedLocked("postpone", postpones));
  }
  const Outcome outcome = OutcomeOf(postpones);
  absl::flat_hash_set<absl::string_view> locked;
  if (result.ok()) locked.insert(result->locked.begin(), result->locked.end());
  // Those a row lock held back stay being written (in flight) until a
  // retry commits them; so do the retried ones when the write failed for
  // now. The others are done.
  std::vector<SettlementLedger::Postpone> taken;
  std::vector<Postponement> written;
  for (size_t i = 0; i < work.postponed.size(); ++i) {
    const std::string& id = work.postponed[i].first;
    const bool retried = i >= work.first_retried;
    if (locked.contains(id) || (retried && outcome == Outcome::kTransient)) {
      if (!retried && locked_writes_.RowHeld(id, clock_->MonotonicNow())) {
        ++counters_.locked_rows;  // the row's first write held back
      }
      locked_writes_.HoldPostpone(std::move(work.postponed[i]));
      continue;
    }
    if (retried) locked_writes_.RowFreed(id);
    taken.push_back(std::move(work.postponed[i]));
    written.push_back(work.writes.postpones[i]);
  }
  locked_writes_.ArmRetries(clock_->MonotonicNow());
  reconciler_.PostponesDone(taken, written, outcome, WriteGtid(result));
  if (postpones.ok()) {
    counters_.postponed += static_cast<int64_t>(written.size());
    std::optional<int64_t> earliest;
    for (const Postponement& p : written) {
      earliest = std::min(earliest.value_or(p.time_next), p.time_next);
    }
    if (earliest.has_value()) {
      scheduler_.NoteDueAt(*earliest, clock_->MonotonicNow());
    }
  }
}

void MessageManager::SettleAcksLocked(
    const absl::StatusOr<WriteResult>& result, Work& work,
    std::vector<std::function<void()>>& replies, std::vector<Log>& logs) {
  mu_.AssertHeld();
  absl::flat_hash_set<absl::string_view> locked;
  if (result.ok()) locked.insert(result->locked.begin(), result->locked.end());
  for (size_t i = 0; i < work.acks.size(); ++i) {
    PendingAck& ack = work.acks[i];
    // Held back by a row lock before, and answered then.
    const bool held = ack.done == nullptr;
    if (!held) requests_.Settled(ack.ticket.ids.size());
    absl::StatusOr<int64_t> n =
        !result.ok()              ? absl::StatusOr<int64_t>(result.status())
        : i < result->acks.size() ? result->acks[i]
                                  : absl::StatusOr<int64_t>(int64_t{0});
    const Outcome outcome = OutcomeOf(n.status());
    if (held && outcome == Outcome::kTransient) {
      locked_writes_.HoldAck(std::move(ack));  // nobody else retries it
      continue;
    }
    if (n.ok()) {
      counters_.acked += *n;
      // The ids a row lock held back are acked later; the request is
      // answered with the rows it acked now.
      SettlementLedger::SettleTicket done;
      SettlementLedger::SettleTicket waiting;
      for (std::string& id : ack.ticket.ids) {
        const bool wait = locked.contains(id);
        if (wait && !held &&
            locked_writes_.RowHeld(id, clock_->MonotonicNow())) {
          ++counters_.locked_rows;  // the row's first write held back
        } else if (!wait && held) {
          locked_writes_.RowFreed(id);
        }
        (wait ? waiting : done).ids.push_back(std::move(id));
      }
      for (SettlementLedger::Postpone& p : ack.ticket.cancelled) {
        (locked.contains(p.first) ? waiting : done)
            .cancelled.push_back(std::move(p));
      }
      reconciler_.SettleDone(done, outcome, WriteGtid(result));
      if (!waiting.ids.empty()) {
        locked_writes_.HoldAck(PendingAck{std::move(waiting), nullptr});
      }
    } else {
      reconciler_.SettleDone(ack.ticket, outcome);
      if (held) {
        for (const std::string& id : ack.ticket.ids) {
          locked_writes_.RowFreed(id);
        }
        logs.push_back(StatementFailedLocked("held-back ack", n.status()));
      }
      n = absl::Status(n.status().code(),
                       absl::StrCat("ack on ", log_name_,
                                    " failed: ", n.status().message()));
    }
    if (held) continue;
    replies.push_back([done = std::move(ack.done), n = std::move(n)]() mutable {
      done(std::move(n));
    });
  }
  locked_writes_.ArmRetries(clock_->MonotonicNow());
}

}  // namespace msgq
