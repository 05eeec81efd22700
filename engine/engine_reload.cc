// Engine::ReloadLoop and Engine::Reload (engine.h): reading the message
// tables' definitions and starting, restarting, failing or stopping their
// managers to match. Kept out of engine.cc, which serves the tables.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/queue/partition_plan.h"
#include "engine/sql/mysql_connection.h"
#include "engine/sql/mysql_message_store.h"

namespace msgq {
namespace {

// A message table needs transactions: an enqueue commits with the
// application's transaction, and a round's writes (postpones, the acks'
// SAVEPOINT) commit or roll back together.
absl::StatusOr<MessageTable> BuildTable(const TableDefinition& def) {
  if (!def.transactional) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table `", def.keyspace, "`.`", def.name, "`: its engine ", def.engine,
        " has no transactions; a message table needs one (ALTER TABLE ... "
        "ENGINE=InnoDB)"));
  }
  return BuildMessageTable(def.keyspace, def.name, def.comment, def.columns);
}

}  // namespace

void Engine::ReloadLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    // Retry sooner while the schema has never been read.
    absl::Duration wait =
        loaded_once_ ? options_.reload_interval
                     : std::min(options_.reload_interval, absl::Seconds(1));
    if (!reload_requested_) wake_.WaitFor(&mu_, wait);
    reload_requested_ = false;
    if (stopping_) break;
    mu_.Unlock();
    (void)Reload();
    mu_.Lock();
  }
}

absl::Status Engine::Reload() {
  absl::MutexLock reload_lock(&reload_mu_);
  absl::StatusOr<SchemaSnapshot> snapshot = ReadSchema();
  if (!snapshot.ok()) {
    absl::MutexLock lock(&mu_);
    if (last_error_.ok() ||
        last_error_.message() != snapshot.status().message()) {
      LogWarning("cannot read the schema: ", snapshot.status().message());
    }
    last_error_ = snapshot.status();
    return snapshot.status();
  }
  for (const std::string& db : options_.databases) {
    if (std::find(snapshot->databases.begin(), snapshot->databases.end(), db) ==
        snapshot->databases.end()) {
      absl::MutexLock lock(&mu_);
      if (!loaded_once_) LogWarning("database `", db, "` does not exist (yet)");
    }
  }
  // Decide under the lock, build managers outside it, swap under it, stop
  // the replaced ones outside it.
  absl::StatusOr<ReloadPlan> plan = PlanReload(*snapshot);
  if (!plan.ok()) return plan.status();
  for (const Key& key : plan->restarted) {
    LogTableInfo(key.first, key.second, "table `", key.first, "`.`", key.second,
                 "` was truncated, dropped or altered: starting over");
  }
  absl::Status swapped =
      SwapIn(BuildEntries(plan->changed, plan->successors), plan->removed);
  // Groups that could not be read at Start() (engine_groups.cc).
  if (swapped.ok() && groups_pending()) (void)LoadGroups();
  return swapped;
}

absl::StatusOr<SchemaSnapshot> Engine::ReadSchema() {
  absl::StatusOr<MysqlPool::Lease> conn =
      pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
  if (!conn.ok()) return conn.status();
  absl::StatusOr<SchemaSnapshot> snapshot =
      LoadSchema(**conn, options_.databases);
  // information_schema can miss a table for a moment while an ALTER
  // (msgqd's own partition purge among them) swaps its definition: a
  // snapshot that drops or changes a loaded table is read once more, and
  // the second read decides. Before it, each table the first read missed
  // is opened by a statement that waits for the ALTER's metadata lock, so
  // the second read comes after the ALTER has finished.
  const auto drops_or_changes = [&](const SchemaSnapshot& snap,
                                    std::vector<Key>* missing) {
    absl::MutexLock lock(&mu_);
    std::set<Key> found;
    bool changed = false;
    for (const TableDefinition& def : snap.tables) {
      Key key{def.keyspace, def.name};
      auto it = tables_.find(key);
      if (it == tables_.end()) continue;
      found.insert(key);
      if (!(it->second.definition == def)) changed = true;
    }
    for (const auto& [key, entry] : tables_) {
      if (!found.contains(key)) missing->push_back(key);
    }
    return changed || !missing->empty();
  };
  std::vector<Key> missing;
  if (snapshot.ok() && drops_or_changes(*snapshot, &missing)) {
    for (const Key& key : missing) {
      // ER_NO_SUCH_TABLE when it is really gone; the result is not used.
      // At most 5 s behind a long ALTER (MariaDB; MySQL waits its own
      // lock_wait_timeout, bounded by the connection's io_timeout).
      (void)(*conn)->Query(
          absl::StrCat("/*M! SET STATEMENT lock_wait_timeout=5 "
                       "FOR */ SELECT 1 FROM ",
                       QuoteIdentifier(key.first), ".",
                       QuoteIdentifier(key.second), " LIMIT 0"));
    }
    snapshot = LoadSchema(**conn, options_.databases);
  }
  if (snapshot.ok()) ReadPaused(**conn);
  return snapshot;
}

absl::StatusOr<Engine::ReloadPlan> Engine::PlanReload(
    const SchemaSnapshot& snapshot) {
  ReloadPlan plan;
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("engine stopping");
  std::map<Key, const TableDefinition*> seen;
  std::set<Key> reset;  // restarted: logged once the lock is released
  reset.swap(reset_requested_);
  for (const TableDefinition& def : snapshot.tables) {
    Key key{def.keyspace, def.name};
    seen[key] = &def;
    auto it = tables_.find(key);
    if (it == tables_.end() || !(it->second.definition == def) ||
        reset.contains(key)) {
      if (reset.contains(key)) plan.restarted.push_back(key);
      if (it != tables_.end() && it->second.manager != nullptr) {
        plan.successors.insert(key);
      }
      plan.changed.push_back(def);
    }
  }
  for (const auto& [key, entry] : tables_) {
    if (!seen.contains(key)) plan.removed.push_back(key);
  }
  return plan;
}

std::vector<std::pair<Engine::Key, Engine::Entry>> Engine::BuildEntries(
    const std::vector<TableDefinition>& changed,
    const std::set<Key>& successors) {
  std::vector<std::pair<Key, Entry>> fresh;
  for (const TableDefinition& def : changed) {
    Entry entry;
    entry.definition = def;
    absl::StatusOr<MessageTable> table = BuildTable(def);
    if (table.ok()) {
      table->purge_by_partition =
          table->has_time_created &&
          IsRangeOnTimeCreated(def.partition_method, def.partition_expression);
      entry.manager = NewManager(
          *std::move(table), successors.contains(Key{def.keyspace, def.name}));
      LogTableInfo(def.keyspace, def.name, "table `", def.keyspace, "`.`",
                   def.name, "` loaded");
    } else {
      entry.error = std::string(table.status().message());
      LogTableWarning(def.keyspace, def.name, entry.error);
    }
    fresh.emplace_back(Key{def.keyspace, def.name}, std::move(entry));
  }
  return fresh;
}

absl::Status Engine::SwapIn(std::vector<std::pair<Key, Entry>> fresh,
                            const std::vector<Key>& removed) {
  // A changed table's successor starts only once its predecessor stopped:
  // its subscribers closed (handing back what they never wrote) and its
  // postpones and acks flushed, so two managers never send one table.
  // Meanwhile the successor already takes subscribers and acks.
  std::vector<std::shared_ptr<MessageManager>> retired;
  std::vector<std::shared_ptr<MessageManager>> to_start;
  std::optional<size_t> tables_now;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("engine stopping");
    for (auto& [key, entry] : fresh) {
      auto it = tables_.find(key);
      if (it != tables_.end() && it->second.manager != nullptr) {
        retired.push_back(it->second.manager);
      }
      if (entry.manager != nullptr) to_start.push_back(entry.manager);
      tables_[key] = std::move(entry);
    }
    for (const Key& key : removed) {
      auto it = tables_.find(key);
      if (it->second.manager != nullptr) retired.push_back(it->second.manager);
      tables_.erase(it);
    }
    if (!loaded_once_ || !last_error_.ok()) tables_now = tables_.size();
    loaded_once_ = true;
    last_error_ = absl::OkStatus();
    retiring_ = retired;
  }
  // Logged once the lock is released.
  for (const Key& key : removed) {
    LogTableInfo(key.first, key.second, "table `", key.first, "`.`", key.second,
                 "` is gone");
  }
  if (tables_now.has_value()) {
    LogInfo("schema loaded: ", *tables_now, " message table(s)");
  }
  // A retired manager's Stop() may wait for writes that rows another
  // transaction keeps locked hold back (message_manager.h): the successor
  // waits with it, and a concurrent Engine::Stop() finds it in retiring_.
  for (auto& manager : retired) {
    manager->Stop(absl::UnavailableError(
        "message table was changed or dropped: reconnect"));
  }
  {
    absl::MutexLock lock(&mu_);
    retiring_.clear();
  }
  ApplyPaused();  // before a new manager's first send
  for (auto& manager : to_start) manager->Start();
  if (keeper_ != nullptr && !to_start.empty()) keeper_->Wake();
  return absl::OkStatus();
}

}  // namespace msgq
