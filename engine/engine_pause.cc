// Engine: paused tables (msgq pause / resume). The state lives in MySQL
// (engine/sql/mysql_pause_store.h, in the first of --databases); every msgqd
// reads it with each schema reload, so an instance learns of a pause made
// through another one within --schema_reload_interval, and a table starts
// paused after a restart (the set is read before any manager starts).
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/mysql_pause_store.h"

namespace msgq {

void Engine::ReadPaused(MysqlConnection& conn) {
  uint64_t writes = 0;
  {
    absl::MutexLock lock(&mu_);
    writes = pause_writes_;
  }
  absl::StatusOr<std::set<Key>> paused =
      MysqlPauseStore(options_.databases.front()).Read(conn);
  absl::MutexLock lock(&mu_);
  if (!paused.ok()) {
    // Keep what was known; the next reload tries again.
    if (pause_error_ != paused.status().message()) {
      LogWarning("cannot read the paused tables: ", paused.status().message());
      pause_error_ = std::string(paused.status().message());
    }
    return;
  }
  pause_error_.clear();
  // A pause written here while this read ran may be missing from it: the
  // next reload reads it.
  if (writes == pause_writes_) paused_ = *std::move(paused);
}

void Engine::ApplyPaused() {
  std::vector<std::pair<std::shared_ptr<MessageManager>, bool>> apply;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : tables_) {
      if (entry.manager == nullptr) continue;
      apply.emplace_back(entry.manager, paused_.contains(key));
    }
  }
  for (auto& [manager, paused] : apply) manager->SetPaused(paused);
}

void Engine::SetPaused(absl::string_view keyspace, absl::string_view name,
                       bool paused, std::function<void(absl::Status)> done) {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (!manager.ok()) {
    done(manager.status());
    return;
  }
  const Key key{(*manager)->table().keyspace, (*manager)->table().name};
  pause_worker_.Post([this, key, paused, done = std::move(done)] {
    absl::Status status;
    {
      absl::StatusOr<MysqlPool::Lease> conn =
          pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
      if (!conn.ok()) {
        status = conn.status();
      } else {
        status = MysqlPauseStore(options_.databases.front())
                     .Write(**conn, key, paused, clock_->NowNanos(),
                            options_.instance_id);
      }
    }
    if (!status.ok()) {
      done(absl::Status(
          status.code(),
          absl::StrCat(paused ? "pause" : "resume", " of `", key.first, "`.`",
                       key.second, "` failed: ", status.message())));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      ++pause_writes_;
      if (paused) {
        paused_.insert(key);
      } else {
        paused_.erase(key);
      }
    }
    ApplyPaused();
    LogTableInfo(key.first, key.second, "table `", key.first, "`.`", key.second,
                 paused ? "` paused" : "` resumed");
    done(absl::OkStatus());
  });
}

}  // namespace msgq
