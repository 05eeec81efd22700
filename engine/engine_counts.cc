// Engine::CountsLoop and Engine::CountTable (engine.h): each loaded
// table's exact counts by state (engine/queue/message_counts.h), loaded by
// one counting read (engine/sql/state_count_statement.h) and kept from the
// binlog (Engine::OnRowChanges); read again every counts_reconcile, at
// once when changes may have been missed (stale), and every
// kUnfollowedReconcile while the binlog is not followed. Design:
// docs/design/exact-counts.md.
#include <algorithm>
#include <memory>
#include <vector>

#include "common/log.h"
#include "engine/engine.h"
#include "engine/sql/consistent_snapshot.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/state_count_statement.h"

namespace msgq {
namespace {

constexpr absl::Duration kCountsTick = absl::Seconds(1);
// Without the binlog the counts see no change between reads.
constexpr absl::Duration kUnfollowedReconcile = absl::Minutes(1);
// A read that changes raced is retried at the next tick; after this many
// in a row (a table never quiet for one read) it is installed anyway and
// the next reconcile corrects what the race miscounted.
constexpr int kMaxRaced = 5;

// The GTID position of a snapshot at `at`: nullopt when the server cannot
// say (no binlog).
std::optional<MessageCounts::GtidPosition> GtidPositionOf(
    MysqlConnection& conn, const BinlogPosition& at) {
  absl::StatusOr<std::string> gtid = GtidPositionAt(conn, at);
  if (!gtid.ok() || gtid->empty()) return std::nullopt;
  absl::StatusOr<MessageCounts::GtidPosition> position =
      MessageCounts::ParseGtidPosition(*gtid);
  if (!position.ok()) return std::nullopt;
  return *position;
}

}  // namespace

absl::StatusOr<MessageCounts::Snapshot> Engine::ReadCounts(
    const Key& key, int64_t max_groups,
    std::optional<MessageCounts::GtidPosition>* position) {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(key.first, key.second);
  if (!manager.ok()) return manager.status();
  absl::StatusOr<MysqlPool::Lease> conn =
      pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
  if (!conn.ok()) return conn.status();
  // One snapshot for the position and the count: the changes after that
  // position are the ones the count does not hold.
  absl::StatusOr<BinlogPosition> at = BeginConsistentSnapshot(**conn);
  if (!at.ok()) return at.status();
  *position = GtidPositionOf(**conn, *at);
  const MessageTable& table = (*manager)->table();
  const int64_t now_ns = clock_->NowNanos();
  absl::StatusOr<QueryResult> all =
      (*conn)->Query(StateCountSql(table, max_groups));
  absl::StatusOr<std::vector<int64_t>> priorities =
      all.ok() ? PrioritiesOf(*all)
               : absl::StatusOr<std::vector<int64_t>>(all.status());
  absl::StatusOr<QueryResult> future = absl::CancelledError("none");
  if (priorities.ok() && !priorities->empty()) {
    future =
        (*conn)->Query(FutureCountSql(table, *priorities, now_ns, max_groups));
  }
  absl::StatusOr<uint64_t> ended = (*conn)->Execute("COMMIT");
  if (!priorities.ok()) return priorities.status();
  if (!priorities->empty() && !future.ok()) return future.status();
  if (!ended.ok()) return ended.status();
  return ParseStateCount(*all, priorities->empty() ? nullptr : &*future, now_ns,
                         max_groups);
}

void Engine::CountsLoop() {
  absl::MutexLock lock(&mu_);
  // The first pass runs at once: the tables loaded at start are counted
  // before their first subscribers come.
  absl::Time next = clock_->MonotonicNow();
  while (!stopping_) {
    while (!stopping_ && clock_->MonotonicNow() < next) {
      wake_.WaitFor(&mu_, next - clock_->MonotonicNow());
    }
    if (stopping_) break;
    next = clock_->MonotonicNow() + kCountsTick;
    // Follow the loaded tables: new ones get counts, gone ones lose them.
    std::vector<Key> gone;
    for (auto it = counts_.begin(); it != counts_.end();) {
      auto t = tables_.find(it->first);
      if (t == tables_.end() || t->second.manager == nullptr) {
        gone.push_back(it->first);
        it = counts_.erase(it);
      } else {
        ++it;
      }
    }
    if (!gone.empty()) {
      mu_.Unlock();
      for (const Key& key : gone) NotifyCounts(key.first, key.second);
      mu_.Lock();
      if (stopping_) break;
    }
    std::vector<Key> due;
    const absl::Time mono = clock_->MonotonicNow();
    for (const auto& [key, entry] : tables_) {
      if (entry.manager == nullptr) continue;
      auto [it, fresh] = counts_.try_emplace(key);
      if (fresh) {
        it->second.counts = std::make_shared<MessageCounts>(options_.counts);
      }
      if (mono >= it->second.next_read || it->second.counts->stale()) {
        due.push_back(key);
      }
    }
    for (const Key& key : due) {
      if (stopping_) break;
      mu_.Unlock();
      CountTable(key, mono);
      mu_.Lock();
    }
  }
}

void Engine::CountTable(const Key& key, absl::Time mono) {
  std::shared_ptr<MessageCounts> counts;
  absl::Duration every = options_.counts_reconcile;
  {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find(key);
    if (it == counts_.end()) return;
    counts = it->second.counts;
    if (!binlog_streaming_) every = std::min(every, kUnfollowedReconcile);
  }
  const int64_t max_groups = static_cast<int64_t>(options_.counts.max_times);
  const uint64_t token = counts->BeginRead();
  std::optional<MessageCounts::GtidPosition> position;
  absl::StatusOr<MessageCounts::Snapshot> snapshot =
      ReadCounts(key, max_groups, &position);
  absl::Status installed = snapshot.status();
  bool forced = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find(key);
    if (it == counts_.end() || it->second.counts != counts) return;
    CountsEntry& entry = it->second;
    if (!snapshot.ok()) counts->AbandonRead();
    if (snapshot.ok()) {
      installed = counts->Install(token, *snapshot, position);
      if (installed.code() == absl::StatusCode::kAborted &&
          ++entry.raced >= kMaxRaced) {
        installed = counts->Install(counts->BeginRead(), *std::move(snapshot));
        forced = true;
      }
    }
    if (installed.ok()) {
      entry.raced = 0;
      entry.next_read = mono + every;
    } else if (installed.code() != absl::StatusCode::kAborted) {
      entry.next_read = mono + every;  // a failed read waits its turn
    }
  }
  if (installed.ok()) NotifyCounts(key.first, key.second);
  if (forced) {
    LogInfo("counts of `", key.first, "`.`", key.second,
            "`: rows changed during ", kMaxRaced,
            " counting reads in a row; took the last one");
  } else if (!installed.ok() &&
             installed.code() != absl::StatusCode::kAborted) {
    LogWarning("counts of `", key.first, "`.`", key.second,
               "`: the counting read failed: ", installed.message());
  }
}

absl::StatusOr<MessageCounts::Counts> Engine::TableCounts(
    absl::string_view keyspace, absl::string_view name) const {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (!manager.ok()) return manager.status();
  if (!options_.exact_counts) {
    return absl::FailedPreconditionError(
        "exact counts are off (--exact_counts=false)");
  }
  const MessageTable& table = (*manager)->table();
  std::optional<MessageCounts::Counts> counts;
  {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find(Key{table.keyspace, table.name});
    if (it != counts_.end())
      counts = it->second.counts->Get(clock_->NowNanos());
  }
  if (!counts.has_value()) {
    return absl::UnavailableError(absl::StrCat("counts of `", table.keyspace,
                                               "`.`", table.name,
                                               "` are not loaded yet"));
  }
  return *counts;
}

uint64_t Engine::AddCountsListener(CountsListener changed) {
  absl::MutexLock lock(&listeners_mu_);
  const uint64_t id = next_listener_++;
  counts_listeners_.emplace(id, std::move(changed));
  return id;
}

void Engine::RemoveCountsListener(uint64_t id) {
  absl::MutexLock lock(&listeners_mu_);
  counts_listeners_.erase(id);
}

void Engine::NotifyCounts(const std::string& db, const std::string& table) {
  absl::MutexLock lock(&listeners_mu_);
  for (const auto& [id, changed] : counts_listeners_) changed(db, table);
}

}  // namespace msgq
