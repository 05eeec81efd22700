#include "engine/lease/instance_lock.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace msgq {
namespace {

// "keyspace.table" -> "keyspace" (a database name has no '.').
std::string DatabaseOf(const std::string& table) {
  return table.substr(0, table.find('.'));
}

// FNV-1a: the same in every build, so every msgqd names the lock alike.
uint64_t StableHash(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

InstanceLock::InstanceLock(Options options,
                           std::unique_ptr<MysqlLockStore> store, Clock* clock,
                           Tables tables)
    : OwnershipKeeper(options.lease / 5),
      options_(std::move(options)),
      store_(std::move(store)),
      clock_(clock),
      tables_(std::move(tables)) {}

InstanceLock::~InstanceLock() { Stop(); }

std::string InstanceLock::LockName(const std::string& database) {
  std::string name = absl::StrCat("msgq:", database);
  if (name.size() <= 64) return name;
  return absl::StrCat(name.substr(0, 47), ":",
                      absl::Hex(StableHash(database), absl::kZeroPad16));
}

std::string InstanceLock::Describe(const Holder& holder) {
  return holder.host.empty()
             ? absl::StrCat("MySQL connection ", holder.connection)
             : absl::StrCat("MySQL connection ", holder.connection, " from ",
                            holder.host);
}

std::string InstanceLock::StandbyReason(const std::string& database,
                                        const Holder& holder) const {
  return absl::StrCat(
      "another msgqd holds GET_LOCK('", LockName(database), "') (",
      Describe(holder), "): this msgqd does not send the tables of `", database,
      "` until that one is gone; to share the tables among several msgqd, "
      "start each with --leases");
}

void InstanceLock::Round() {
  const std::map<std::string, std::shared_ptr<MessageManager>> tables =
      tables_();
  const absl::Time t0 = clock_->MonotonicNow();
  std::vector<std::string> names;
  for (const std::string& db : options_.databases) {
    names.push_back(LockName(db));
  }
  absl::StatusOr<std::vector<Holder>> held = store_->Hold(names);
  if (!held.ok()) {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = error_.ok();
      error_ = held.status();
    }
    if (first) {
      LogWarning(
          "instance lock: cannot check GET_LOCK (tables stop sending when "
          "their grant runs out): ",
          held.status().message());
    }
    return;
  }
  std::map<std::string, Holder> now;
  for (size_t i = 0; i < names.size(); ++i) {
    now[options_.databases[i]] = (*held)[i];
  }
  const int64_t session = store_->connection_id();
  for (const auto& [db, holder] : now) {
    if (holder.mine) {
      // A session of our own other than the first that held the lock: the
      // lock was free in between, and maybe another msgqd's.
      auto [it, first] = held_on_.emplace(db, session);
      if (!first && it->second != session) contested_.insert(db);
    } else if (holder.connection != 0) {
      contested_.insert(db);
    }
  }
  for (const auto& [name, manager] : tables) {
    const std::string db = DatabaseOf(name);
    auto it = now.find(db);
    if (it != now.end() && it->second.mine) {
      manager->Own(t0 + options_.lease * 3 / 4,
                   /*images_wait=*/contested_.contains(db));
    } else {
      manager->Disown();
    }
  }
  std::map<std::string, Holder> before;
  bool recovered = false;
  {
    absl::MutexLock lock(&mu_);
    before.swap(holders_);
    holders_ = now;
    ran_ = true;
    recovered = !error_.ok();
    error_ = absl::OkStatus();
  }
  if (recovered) LogInfo("instance lock: MySQL answers again");
  LogChanges(before, now, store_->connection_id());
}

void InstanceLock::LogChanges(const std::map<std::string, Holder>& before,
                              const std::map<std::string, Holder>& now,
                              int64_t my_connection) const {
  for (const auto& [db, holder] : now) {
    auto was = before.find(db);
    const bool changed =
        was == before.end() || was->second.mine != holder.mine ||
        (!holder.mine && was->second.connection != holder.connection);
    if (!changed) continue;
    if (holder.mine) {
      LogInfo("instance lock: ", options_.self, " holds GET_LOCK('",
              LockName(db), "') on MySQL connection ", my_connection,
              " and sends the tables of `", db, "`");
    } else {
      LogWarning("instance lock: ", StandbyReason(db, holder));
    }
  }
}

void InstanceLock::Leave() {
  for (auto& [name, manager] : tables_()) manager->Disown();
  store_->Release();
}

TableOwnership InstanceLock::Ownership(const std::string& table) const {
  absl::MutexLock lock(&mu_);
  TableOwnership out;
  if (!error_.ok()) {
    out.state = "unknown";
    out.error = std::string(error_.message());
    return out;
  }
  out.state = "standby";
  auto it = holders_.find(DatabaseOf(table));
  if (!ran_ || it == holders_.end()) return out;
  if (it->second.mine) {
    out.state = "off";
    return out;
  }
  out.owner = Describe(it->second);
  out.error = StandbyReason(it->first, it->second);
  return out;
}

}  // namespace msgq
