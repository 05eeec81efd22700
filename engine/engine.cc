#include "engine/engine.h"

#include <algorithm>
#include <functional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/monotonic_cond_var.h"
#include "common/utf8.h"
#include "engine/binlog/bookkeeping_columns.h"
#include "engine/lease/instance_lock.h"
#include "engine/lease/lease_keeper.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

// A client's name as it may appear in an error: escaped and cut to a size
// that fits in any status message (a 10 MB name must not become a 40 MB
// error that the client cannot even receive).
std::string Echo(absl::string_view name) {
  constexpr size_t kMax = 64;
  if (name.size() <= kMax) return absl::CHexEscape(name);
  return absl::StrCat(absl::CHexEscape(name.substr(0, kMax)), "... (",
                      name.size(), " bytes)");
}

// The options as the engine runs them: managers leased unless alone, and
// every MySQL connection reporting to one MysqlActivity.
Engine::Options Completed(Engine::Options options, const Clock* clock) {
  options.manager.leased = options.sharing != Engine::Options::Sharing::kAlone;
  if (options.mysql.activity == nullptr) {
    options.mysql.activity =
        std::make_shared<MysqlActivity>(clock, options.mysql_stall_timeout);
  }
  return options;
}

}  // namespace

Engine::Engine(Options options, Clock* clock, JitterSource* jitter)
    : options_(Completed(std::move(options), clock)),
      db_clock_(clock),
      clock_(&db_clock_),
      jitter_(jitter),
      pool_(std::make_shared<MysqlPool>(
          PoolOptions{.max_connections = PoolSize(options_),
                      .max_idle = PoolSize(options_)},
          options_.mysql)),
      executor_(std::make_shared<RoundExecutor>(PoolSize(options_), clock)) {
  absl::MutexLock lock(&mu_);
  instance_id_ = options_.instance_id;
  address_ = options_.address;
}

void Engine::Identify(std::string instance_id, std::string address) {
  absl::MutexLock lock(&mu_);
  instance_id_ = std::move(instance_id);
  address_ = std::move(address);
}

std::string Engine::instance_id() const {
  absl::MutexLock lock(&mu_);
  return instance_id_;
}

std::unique_ptr<OwnershipKeeper> Engine::NewKeeper() {
  std::string self, address;
  {
    absl::MutexLock lock(&mu_);
    self = instance_id_;
    address = address_;
  }
  MysqlOptions mysql = options_.mysql;
  mysql.io_timeout = options_.lease_duration;  // a round never hangs long
  auto tables = [this] { return LoadedTables(); };
  if (options_.sharing == Options::Sharing::kLeases) {
    return std::make_unique<LeaseKeeper>(
        LeaseKeeper::Options{
            .self = self, .address = address, .lease = options_.lease_duration},
        std::make_unique<MysqlLeaseStore>(mysql, options_.databases.front()),
        clock_, tables);
  }
  if (options_.sharing == Options::Sharing::kInstanceLock) {
    return std::make_unique<InstanceLock>(
        InstanceLock::Options{.self = self,
                              .databases = options_.databases,
                              .lease = options_.lease_duration},
        std::make_unique<MysqlLockStore>(
            mysql, InstanceLock::IdleTimeout(options_.lease_duration)),
        clock_, tables);
  }
  return nullptr;
}

Engine::~Engine() { Stop(); }

absl::Status Engine::Start() {
  keeper_ = NewKeeper();
  if (keeper_ != nullptr) {
    if (absl::Status s = keeper_->Check(); !s.ok()) return s;
  }
  if (options_.mysql.primary != nullptr) {
    MysqlOptions mysql = options_.mysql;
    mysql.io_timeout = absl::Seconds(5);  // a check never hangs long
    // It asks every server, not only the one msgqd uses: a replica that
    // does not answer says nothing about msgqd's readiness.
    mysql.activity = nullptr;
    primary_monitor_ =
        std::make_unique<MysqlPrimaryMonitor>(mysql, absl::Seconds(1));
    primary_monitor_->Start();
  }
  MeasureDbClock();
  absl::Status status = Reload();
  const std::string binlog_start = StartGroups();
  groups_timer_ = std::thread([this] { GroupsTimerLoop(); });
  if (keeper_ != nullptr) keeper_->Start();
  thread_ = std::thread([this] { ReloadLoop(); });
  clock_thread_ = std::thread([this] { ClockLoop(); });
  if (options_.exact_counts) {
    counts_thread_ = std::thread([this] { CountsLoop(); });
  }
  if (options_.binlog) {
    BinlogWatcher::Options binlog;
    binlog.mysql = options_.mysql;
    binlog.server_id = options_.binlog_server_id;
    binlog.start_gtid = binlog_start;
    binlog_ = std::make_unique<BinlogWatcher>(
        binlog, static_cast<BinlogWatcher::Listener*>(this));
    binlog_->Start();
  } else {
    LogInfo(
        "binlog: disabled (--binlog=false); discovering messages by "
        "polling");
  }
  return status;
}

std::map<std::string, std::shared_ptr<MessageManager>> Engine::LoadedTables()
    const {
  std::map<std::string, std::shared_ptr<MessageManager>> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, entry] : tables_) {
    if (entry.manager == nullptr) continue;
    out.emplace(absl::StrCat(key.first, ".", key.second), entry.manager);
  }
  return out;
}

std::shared_ptr<MessageManager> Engine::FindLoaded(
    const std::string& db, const std::string& table) const {
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(Key{db, table});
  if (it == tables_.end()) return nullptr;
  return it->second.manager;
}

std::optional<BookkeepingColumns> Engine::Columns(const std::string& db,
                                                  const std::string& table) {
  std::shared_ptr<MessageManager> manager = FindLoaded(db, table);
  if (manager == nullptr) return std::nullopt;
  return BookkeepingOf(manager->table(), options_.manager.binlog_row_images);
}

void Engine::OnRowChanges(const std::string& db, const std::string& table,
                          std::vector<RowChange> changes) {
  const bool replayed = Replayed(changes);
  FeedGroups(db, table, changes);
  if (replayed) return;  // read again for the groups alone
  std::shared_ptr<MessageCounts> counts;
  std::shared_ptr<MessageManager> manager;
  {
    absl::MutexLock lock(&mu_);
    auto it = tables_.find(Key{db, table});
    if (it != tables_.end()) manager = it->second.manager;
    auto c = counts_.find(Key{db, table});
    if (c != counts_.end()) counts = c->second.counts;
  }
  if (counts != nullptr) counts->Apply(changes);
  if (manager != nullptr) manager->OnRowChanges(changes);
  if (counts != nullptr) NotifyCounts(db, table);
}

void Engine::OnTableReset(const std::string& db, const std::string& table) {
  absl::MutexLock lock(&mu_);
  const Key key{db, table};
  if (!tables_.contains(key)) return;
  // The reload thread replaces the manager (and its cache) even if the
  // definition is unchanged (TRUNCATE, DROP + CREATE alike).
  reset_requested_.insert(key);
  if (auto c = counts_.find(key); c != counts_.end()) {
    c->second.counts->MarkStale();
  }
  reload_requested_ = true;
  wake_.SignalAll();  // the reload thread, not only the clock one
}

void Engine::OnTablesDefined(const std::vector<TableName>& tables) {
  for (const TableName& t : tables) {
    if (std::find(options_.databases.begin(), options_.databases.end(), t.db) ==
        options_.databases.end()) {
      continue;
    }
    LogTableInfo(t.db, t.table, "binlog: `", t.db, "`.`", t.table,
                 "` was created or altered; reading the schema");
    absl::MutexLock lock(&mu_);
    reload_requested_ = true;
    wake_.SignalAll();
    return;
  }
}

absl::Status Engine::Health() const {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("server shutting down");
  if (!last_error_.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot read the schema: ", last_error_.message()));
  }
  if (!loaded_once_) return absl::UnavailableError("schema not loaded yet");
  return options_.mysql.activity->Health();
}

BinlogWatcher::Status Engine::binlog_status() const {
  if (binlog_ == nullptr) return BinlogWatcher::Status();
  return binlog_->status();
}

void Engine::OnStreaming(bool streaming, const std::string& /*reason*/) {
  std::vector<std::shared_ptr<MessageManager>> managers;
  {
    absl::MutexLock lock(&mu_);
    binlog_streaming_ = streaming;
    if (!streaming) return;
    // Changes while the stream was not followed were missed.
    for (auto& [key, c] : counts_) c.counts->MarkStale();
    for (const auto& [key, entry] : tables_) {
      if (entry.manager != nullptr) managers.push_back(entry.manager);
    }
  }
  // Cover whatever happened while the stream was not followed.
  for (auto& manager : managers) manager->RequestPoll();
}

bool Engine::Stop(absl::Duration timeout) {
  const absl::Time deadline = clock_->MonotonicNow() + timeout;
  if (binlog_ != nullptr) binlog_->Stop();
  CloseGroups(absl::UnavailableError("server shutting down"));
  std::map<Key, Entry> tables;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.SignalAll();
    tables.swap(tables_);
  }
  db_clock_.Close();  // ends the clock thread
  // Every manager flushes at once, each on a thread of its own, so the
  // shutdown takes as long as the slowest table, not the sum; the threads
  // hold the managers alive even if the caller gives up waiting.
  struct Pending {
    absl::Mutex mu;
    MonotonicCondVar done;
    int left ABSL_GUARDED_BY(mu) = 0;
  };
  auto pending = std::make_shared<Pending>();
  auto run = [pending](std::function<void()> stop) {
    {
      absl::MutexLock lock(&pending->mu);
      ++pending->left;
    }
    std::thread([pending, stop = std::move(stop)] {
      stop();
      absl::MutexLock lock(&pending->mu);
      --pending->left;
      pending->done.SignalAll();
    }).detach();
  };
  for (std::thread* t : {&thread_, &clock_thread_, &counts_thread_}) {
    if (!t->joinable()) continue;
    run([joined = std::make_shared<std::thread>(std::move(*t))] {
      joined->join();
    });
  }
  std::vector<std::shared_ptr<MessageManager>> stopping;
  for (auto& [key, entry] : tables) {
    if (entry.manager == nullptr) continue;
    stopping.push_back(entry.manager);
    run([manager = entry.manager] {
      manager->Stop(absl::UnavailableError("server shutting down"));
    });
  }
  {
    // Managers a reload retires now (stopped by the reload thread).
    absl::MutexLock lock(&mu_);
    stopping.insert(stopping.end(), retiring_.begin(), retiring_.end());
  }
  // Past the deadline, a manager still retrying writes that rows locked by
  // another transaction hold back is waited for until the ack wait of
  // those rows' sends has run out (MessageManager::StopFence): were the
  // process to exit before, the next owner of the table (another msgqd
  // once the lease lapses, or this one restarted) would read the rows due
  // and send them inside that ack wait.
  auto fence = [&stopping] {
    absl::Time latest = absl::InfinitePast();
    for (const auto& m : stopping) latest = std::max(latest, m->StopFence());
    return latest;
  };
  bool finished = false;
  bool extended = false;
  absl::Time until = deadline;
  while (true) {
    {
      absl::MutexLock lock(&pending->mu);
      while (pending->left > 0 &&
             !pending->done.WaitFor(&pending->mu,
                                    until - clock_->MonotonicNow())) {
      }
      finished = pending->left == 0;
    }
    if (finished) break;
    // A manager returns soon after its fence; a write it has in progress
    // then gets the usual `timeout`.
    const absl::Time mono = clock_->MonotonicNow();
    const absl::Time latest = fence();
    if (latest == absl::InfinitePast() || mono >= latest + timeout) break;
    if (!extended && latest > mono) {
      extended = true;
      LogWarning(
          "shutdown: postpones or acks wait for rows another transaction "
          "keeps locked; waiting up to ",
          absl::FormatDuration(latest - mono),
          " more for them, until the ack wait of their sends has run out");
    }
    // Looked at again each second: a manager may start waiting meanwhile.
    until = std::min(latest + timeout, mono + absl::Seconds(1));
  }
  // Every postpone is written: hand the tables over at once.
  if (finished && keeper_ != nullptr) keeper_->Stop();
  return finished;
}

absl::StatusOr<std::shared_ptr<MessageManager>> Engine::Find(
    absl::string_view keyspace, absl::string_view name) const {
  if (name.empty()) return absl::InvalidArgumentError("table name is empty");
  if (!IsValidUtf8(keyspace) || !IsValidUtf8(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("keyspace \"", Echo(keyspace), "\" or table name \"",
                     Echo(name), "\" is not valid UTF-8"));
  }
  if (!keyspace.empty() &&
      std::find(options_.databases.begin(), options_.databases.end(),
                keyspace) == options_.databases.end()) {
    return absl::NotFoundError(
        absl::StrCat("keyspace \"", Echo(keyspace), "\" is not served"));
  }
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("server shutting down");
  auto it = tables_.end();
  if (keyspace.empty()) {
    for (const std::string& db : options_.databases) {
      it = tables_.find(Key{db, std::string(name)});
      if (it != tables_.end()) break;
    }
  } else {
    it = tables_.find(Key{std::string(keyspace), std::string(name)});
  }
  if (it == tables_.end()) {
    if (!loaded_once_) {
      return absl::UnavailableError(
          absl::StrCat("schema not loaded yet: ", last_error_.message()));
    }
    if (keyspace.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "message table `", Echo(name), "` not found in keyspaces ",
          absl::StrJoin(options_.databases, ", ")));
    }
    return absl::NotFoundError(absl::StrCat("message table `", keyspace, "`.`",
                                            Echo(name), "` not found"));
  }
  if (it->second.manager == nullptr) {
    return absl::FailedPreconditionError(it->second.error);
  }
  return it->second.manager;
}

TableOwnership Engine::Ownership(const MessageManager& manager) const {
  if (keeper_ == nullptr) return TableOwnership();
  const MessageTable& t = manager.table();
  return keeper_->Ownership(absl::StrCat(t.keyspace, ".", t.name));
}

std::vector<Engine::TableInfo> Engine::ListTables() const {
  std::vector<std::pair<TableInfo, std::shared_ptr<MessageManager>>> rows;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : tables_) {
      TableInfo info;
      info.discovery = binlog_streaming_ ? "binlog" : "poll";
      info.keyspace = key.first;
      info.name = key.second;
      info.loaded = entry.manager != nullptr;
      info.error = entry.error;
      if (entry.manager != nullptr) {
        info.settings = entry.manager->table().settings;
      }
      if (auto c = counts_.find(key); c != counts_.end()) {
        info.counts = c->second.counts->Get(clock_->NowNanos());
      }
      rows.emplace_back(std::move(info), entry.manager);
    }
  }
  std::vector<TableInfo> out;
  for (auto& [info, manager] : rows) {
    if (manager != nullptr) info.stats = manager->stats();
    if (info.counts.has_value()) info.stats.dead = info.counts->dead;
    if (manager != nullptr && keeper_ != nullptr) {
      info.ownership =
          keeper_->Ownership(absl::StrCat(info.keyspace, ".", info.name));
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace msgq
