// MessageManager's poll (DoPoll): reads the table's due rows into the cache.
//
// A poll reads up to the cache's capacity plus the ids in flight, so when
// the cache is refilled under a backlog (it re-polls when drained to half)
// most of the due rows it finds are rows it already holds: queued, or sent
// and not yet postponed. Reading them again costs MySQL the whole row each
// time (with 16 KB payloads, a BLOB page each, often from disk). When at
// least a quarter of what the poll may return is held, and the store can,
// the poll reads the ids first (PollDueIds: an index-only scan of
// poller_idx) and then only the rows of the ids it does not hold and has
// room for (FetchDue, by primary key). The rows it reads are the same, as
// held rows are skipped either way (AddToCacheLocked).
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
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
    const Work& work, int64_t limit, bool by_ids) {
  PollRead read;
  if (!by_ids) {
    absl::StatusOr<std::vector<Message>> rows =
        store_->PollDue(work.now, limit);
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
    const size_t room =
        cache_.capacity() - std::min(cache_.capacity(), cache_.queued());
    for (std::string& id : *ids) {
      if (cache_.IsQueued(id) || ledger_.InFlight(id)) {
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
  int64_t limit = 0;
  bool by_ids = false;
  {
    absl::MutexLock lock(&mu_);
    // Due rows in flight or already queued come back too and are skipped.
    // Writes of this round have settled most in-flight ids by now, and
    // waiting acks are bounded; at most two cache sizes of rows are read
    // (memory stays bounded by configuration).
    const int64_t capacity = static_cast<int64_t>(cache_.capacity());
    limit = std::min(capacity + static_cast<int64_t>(ledger_.in_flight()),
                     2 * capacity);
    const int64_t held =
        static_cast<int64_t>(cache_.queued() + ledger_.in_flight());
    by_ids =
        store_->polls_ids() && held > 0 && held * kIdsFirstWhenHeld >= limit;
    ReadStartsLocked();
  }
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<PollRead> read = ReadDue(work, limit, by_ids);
  const absl::Duration took = clock_->MonotonicNow() - start;
  Log log;
  bool backlog = false;
  {
    absl::MutexLock lock(&mu_);
    counters_.poll_latency.Observe(took);
    // Whether the poll hit its limit (a backlog), before stale rows go.
    const bool full = read.ok() && static_cast<int64_t>(read->listed) >= limit;
    if (read.ok()) DropStaleReadsLocked(read->rows);
    ReadDoneLocked();
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
      backlog = scheduler_.backlog();
    }
  }
  Emit(std::move(log));
  if (!read.ok()) return !IsUnavailable(read.status());
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

}  // namespace msgq
