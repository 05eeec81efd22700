// MessageManager: what a round reads, and the purge step. A poll reads
// the table's due rows, a fetch the rows the binlog named (by id); both go
// through the RowReconciler (rows stale by the race rules are dropped, ids
// in flight skipped) into the cache, and rows that must die go to a death
// write instead. The class contract is in message_manager.h.
//
// Refill polls. A poll reads up to the cache's capacity plus the ids in
// flight, so when the cache is refilled under a backlog (it re-polls when
// drained to half) most of the due rows it finds are rows it already holds:
// queued, or sent and not yet postponed. Reading them again costs MySQL the
// whole row each time (with 16 KB payloads, a BLOB page each, often from
// disk). When at least a quarter of what the poll may return is held, and
// the store can, the poll reads the ids first (PollDueIds: an index-only
// scan of poller_idx) and then only the rows of the ids it does not hold
// and has room for (FetchDue, by primary key). The rows it reads are the
// same, as held rows are skipped either way (AddToCacheLocked).
//
// The purge step deletes acked rows past vt_purge_after in batches or, for
// a table RANGE-partitioned on time_created (MessageTable::
// purge_by_partition), creates partitions ahead and drops old ones
// (engine/sql/partition_maintenance.h has the statements and the
// guarantee). Like every purge step it runs only while this msgqd owns the
// table (RoundScheduler::PurgeDue).
#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {
namespace {

// The ids first when held * kIdsFirstWhenHeld >= the poll's limit.
constexpr int64_t kIdsFirstWhenHeld = 4;

}  // namespace

struct MessageManager::PollRead {
  std::vector<Message> rows;  // the rows read
  size_t listed = 0;          // due rows the poll found (its LIMIT counts them)
  std::vector<std::string> held;  // listed ids already held, not read again
  bool no_room = false;           // listed ids not read: the cache had no room
};

absl::StatusOr<MessageManager::PollRead> MessageManager::ReadDue(
    const Work& work, int64_t limit, bool by_ids, const KeyRoom* room) {
  PollRead read;
  if (!by_ids) {
    absl::StatusOr<std::vector<Message>> rows =
        room != nullptr ? store_->PollDueByKey(work.now, limit, *room)
                        : store_->PollDue(work.now, limit);
    if (!rows.ok()) return rows.status();
    read.listed = rows->size();
    read.rows = *std::move(rows);
    return read;
  }
  absl::StatusOr<std::vector<std::string>> ids =
      store_->PollDueIds(work.now, limit);
  if (!ids.ok()) return ids.status();
  read.listed = ids->size();
  std::vector<std::string> wanted;
  {
    absl::MutexLock lock(&mu_);
    const size_t max_bytes = options_.cache_max_bytes;
    const size_t room = std::min(
        cache_.capacity() - std::min(cache_.capacity(), cache_.queued()),
        static_cast<size_t>(read_sizer_.RowsFor(
            max_bytes - std::min(max_bytes, cache_.bytes()))));
    for (std::string& id : *ids) {
      if (cache_.IsQueued(id) || reconciler_.InFlight(id)) {
        read.held.push_back(std::move(id));
      } else if (wanted.size() < room) {
        wanted.push_back(std::move(id));
      } else {
        read.no_room = true;
      }
    }
  }
  if (wanted.empty()) return read;
  absl::StatusOr<std::vector<Message>> rows =
      store_->FetchDue(wanted, work.now);
  if (!rows.ok()) return rows.status();
  read.rows = *std::move(rows);
  return read;
}

bool MessageManager::DoPoll(const Work& work) {
  if (!LoadGate(work)) return false;
  int64_t limit = 0;
  bool by_ids = false;
  std::optional<KeyRoom> room;  // msgq_concurrency_by
  uint64_t read_number = 0;
  {
    absl::MutexLock lock(&mu_);
    // Due rows in flight or already queued come back too and are skipped.
    // Writes of this round have settled most in-flight ids by now, and
    // waiting acks are bounded; at most two cache sizes of rows are read
    // (memory stays bounded by configuration), and as many as the cache's
    // bytes hold of the largest row the last read brought.
    const int64_t capacity = static_cast<int64_t>(cache_.capacity());
    const int64_t in_flight = static_cast<int64_t>(reconciler_.in_flight());
    limit =
        std::min({capacity + in_flight, 2 * capacity,
                  read_sizer_.RowsFor(options_.cache_max_bytes) + in_flight});
    const int64_t held =
        static_cast<int64_t>(cache_.queued() + reconciler_.in_flight());
    by_ids = store_->polls_ids() && held > 0 &&
             held * kIdsFirstWhenHeld >= limit && !gate_.on();
    room = gate_.Room(work.now, limit);
    read_number = reconciler_.ReadStarts();
  }
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<PollRead> read =
      ReadDue(work, limit, by_ids, room.has_value() ? &*room : nullptr);
  const absl::Duration took = clock_->MonotonicNow() - start;
  const BinlogPosition at = store_->read_position();
  Log log;
  bool backlog = false;
  {
    absl::MutexLock lock(&mu_);
    counters_.poll_latency.Observe(took);
    // Whether the poll hit its limit in rows or bytes (a backlog), before
    // stale rows go.
    const bool full =
        read.ok() && (static_cast<int64_t>(read->listed) >= limit ||
                      read_sizer_.Note(read->rows));
    RowReconciler::Deferred deferred = reconciler_.ReadEnds(
        read_number, read.ok() ? &read->rows : nullptr, at);
    if (!read.ok()) {
      log = StatementFailedLocked("poll", read.status());
    } else {
      log = MysqlOkLocked();
      ++counters_.polls;
      absl::flat_hash_set<std::string> found;
      if (scheduler_.fetch_waiting() > 0) {
        for (const Message& m : read->rows) found.insert(m.id);
        found.insert(read->held.begin(), read->held.end());
      }
      scheduler_.PollDone(work.round, full, found);
      // As AddToCacheLocked notes when the cache fills up.
      if (read->no_room) scheduler_.NoteBacklog();
      AddToCacheLocked(read->rows);
    }
    DeferredDecidedLocked(std::move(deferred));
    backlog = read.ok() && scheduler_.backlog();
  }
  Emit(std::move(log));
  if (!read.ok()) return !IsUnavailable(read.status());
  if (!backlog) {
    absl::StatusOr<std::optional<int64_t>> due = store_->NextDueAfter(work.now);
    absl::MutexLock lock(&mu_);
    // Not due at the query by MySQL's clock: a reading after it confirms it.
    if (due.ok() && due->has_value()) {
      scheduler_.NoteDueAt(**due, clock_->MonotonicNow());
    }
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
  uint64_t read_number = 0;
  {
    absl::MutexLock lock(&mu_);
    read_number = reconciler_.ReadStarts();
  }
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<std::vector<Message>> rows =
      store_->FetchDue(work.round.fetch_ids, work.now);
  const absl::Duration took = clock_->MonotonicNow() - start;
  const BinlogPosition at = store_->read_position();
  Sends sends;
  Log log;
  {
    absl::MutexLock lock(&mu_);
    counters_.fetch_latency.Observe(took);
    // Cut at its bytes: the rows left out wait for a poll.
    if (rows.ok() && read_sizer_.Note(*rows)) scheduler_.NoteBacklog();
    RowReconciler::Deferred deferred =
        reconciler_.ReadEnds(read_number, rows.ok() ? &*rows : nullptr, at);
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
    }
    DeferredDecidedLocked(std::move(deferred));
    if (rows.ok()) sends = PumpLocked();
  }
  Emit(std::move(log));
  Deliver(std::move(sends));
  return rows.ok() || !IsUnavailable(rows.status());
}

void MessageManager::AddToCacheLocked(std::vector<Message>& rows) {
  mu_.AssertHeld();
  const int64_t now = clock_->NowNanos();
  // msgq's own deaths, one write group per reason.
  std::vector<PendingNack> deaths;
  for (Message& m : rows) {
    // MySQL may still show the state from before an unsettled write.
    if (!reconciler_.MayQueue(m.id)) continue;
    // Due again (its ack wait ran out): no longer held (its subscriber
    // lapses and the resend avoids it), nor in flight (msgq_concurrency_by).
    dispatcher_.DueAgain(m.id);
    gate_.Release(m.id);
    if (std::optional<std::string> reason = failures_.DeathReason(m, now)) {
      dispatcher_.Release(m.id);  // never sent again
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
    m.seen_at = reconciler_.Queued(m.id);
    if (cache_.Add(std::move(m)) == MessageCache::AddResult::kFull) {
      scheduler_.NoteBacklog();
      break;
    }
  }
  for (PendingNack& p : deaths) {
    p.ticket = reconciler_.BeginHold(std::move(p.ticket.ids));
    requests_.Add(std::move(p));
  }
  if (!deaths.empty()) WakeLocked();
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

void MessageManager::DoPartitionPurge(const Work& work) {
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<PartitionReport> report = store_->MaintainPartitions(work.now);
  const absl::Duration took = clock_->MonotonicNow() - start;
  std::vector<std::string> lines;
  Log log;
  {
    absl::MutexLock lock(&mu_);
    counters_.purge_latency.Observe(took);
    if (!report.ok()) {
      log = StatementFailedLocked("partition purge", report.status());
    } else {
      log = MysqlOkLocked();
      scheduler_.PurgeDone(false);
      counters_.partitions_created += report->created;
      counters_.partitions_dropped +=
          static_cast<int64_t>(report->dropped.size());
      counters_.partitions_held_back =
          static_cast<int64_t>(report->held_back.size());
      lines = partition_log_.Lines(*report);
    }
  }
  Emit(std::move(log));
  for (std::string& line : lines) Emit(std::make_pair("W", std::move(line)));
  if (report.ok() || !IsUnavailable(report.status())) DoDeadPurge();
}

}  // namespace msgq
