// Engine: consumer groups (docs/design/consumer-groups.md). Requests are
// checked against the table's definition here (engine/groups/group_spec.h);
// their statements run on the groups worker with a pooled connection, in
// the table's database (engine/groups/mysql_group_store.h).
#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "engine/binlog/bookkeeping_columns.h"
#include "engine/engine.h"
#include "engine/groups/group_filter.h"
#include "engine/groups/group_name.h"
#include "engine/groups/group_start.h"
#include "engine/sql/mysql_message_store.h"

namespace msgq {
namespace {

// How often the groups' ack waits and retries are checked.
constexpr absl::Duration kGroupsTick = absl::Milliseconds(100);
// The ack wait of a group whose table is not loaded.
constexpr absl::Duration kUnloadedAckWait = absl::Seconds(30);
// The largest dead list page (as the default group's).
constexpr int kMaxDeadPage = 10000;
// A group's dead list waits for the groups worker only behind fewer than
// this many closures (flushes, other dead lists); past it, it is refused
// (RESOURCE_EXHAUSTED) rather than queued without bound.
constexpr size_t kMaxQueuedDeadLists = 64;

// A flush's waiter that answers `done` with `value` once the flush wrote
// what the call changed, or with the flush's error.
template <typename T>
std::function<void(absl::Status)> AnswerAfterFlush(
    T value, std::function<void(absl::StatusOr<T>)> done) {
  return
      [value = std::move(value), done = std::move(done)](absl::Status status) {
        if (status.ok()) {
          done(std::move(value));
        } else {
          done(std::move(status));
        }
      };
}

std::string GroupsNotFound(const std::string& db, const std::string& table,
                           absl::string_view group,
                           const std::vector<std::string>& names) {
  return absl::StrCat(
      "group \"", group, "\" of `", db, "`.`", table, "` not found; ",
      names.empty() ? "it has none"
                    : absl::StrCat("its groups: ", absl::StrJoin(names, ", ")));
}

}  // namespace

void Engine::CreateGroup(absl::string_view keyspace, absl::string_view name,
                         GroupSpec spec,
                         std::function<void(absl::StatusOr<GroupRow>)> done) {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (!manager.ok()) {
    done(manager.status());
    return;
  }
  const MessageTable& table = (*manager)->table();
  absl::StatusOr<GroupPlan> plan = PlanGroup(table, spec);
  if (!plan.ok()) {
    done(plan.status());
    return;
  }
  GroupRow row;
  row.keyspace = table.keyspace;
  row.table = table.name;
  row.name = plan->name;
  row.filter = plan->filter;
  groups_worker_.Post([this, row = std::move(row), start = plan->start,
                       done = std::move(done)]() mutable {
    absl::StatusOr<GroupRow> stored = [&]() -> absl::StatusOr<GroupRow> {
      absl::StatusOr<MysqlPool::Lease> conn =
          pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
      if (!conn.ok()) return conn.status();
      if (start.kind != GroupStart::Kind::kEarliest) {
        absl::StatusOr<std::string> now =
            MysqlGroupStore::BinlogGtidPosition(**conn);
        if (!now.ok()) {
          if (start.kind == GroupStart::Kind::kGtid &&
              now.status().code() == absl::StatusCode::kFailedPrecondition) {
            return absl::FailedPreconditionError(
                absl::StrCat("--from=gtid: is checked against the binlog: ",
                             now.status().message()));
          }
          return now.status();
        }
        if (start.kind == GroupStart::Kind::kLatest) {
          row.floor_gtid = *now;
        } else {
          absl::Status reached = CheckGtidReached(*ParseGtidList(start.gtid),
                                                  *ParseGtidList(*now));
          if (!reached.ok()) return reached;
          row.floor_gtid = start.gtid;
        }
      }
      return MysqlGroupStore(row.keyspace).Insert(**conn, row);
    }();
    if (stored.ok()) {
      AddFeed(*stored);
      LogTableInfo(row.keyspace, row.table, "group \"", row.name, "\" of `",
                   row.keyspace, "`.`", row.table, "` created at \"",
                   stored->floor_gtid, "\"",
                   row.filter.empty() ? "" : " with filter ", row.filter);
    }
    done(std::move(stored));
  });
}

void Engine::ListGroups(
    absl::string_view keyspace, absl::string_view name,
    std::function<void(absl::StatusOr<std::vector<GroupRow>>)> done) {
  std::vector<std::string> databases;
  std::string table;
  if (!name.empty()) {
    absl::StatusOr<std::shared_ptr<MessageManager>> manager =
        Find(keyspace, name);
    if (!manager.ok()) {
      done(manager.status());
      return;
    }
    databases.push_back((*manager)->table().keyspace);
    table = (*manager)->table().name;
  } else if (!keyspace.empty()) {
    if (std::find(options_.databases.begin(), options_.databases.end(),
                  keyspace) == options_.databases.end()) {
      done(absl::NotFoundError(absl::StrCat(
          "keyspace \"", EchoForError(keyspace), "\" is not served")));
      return;
    }
    databases.emplace_back(keyspace);
  } else {
    databases = options_.databases;
  }
  groups_worker_.Post([this, databases = std::move(databases),
                       table = std::move(table), done = std::move(done)] {
    absl::StatusOr<std::vector<GroupRow>> all =
        [&]() -> absl::StatusOr<std::vector<GroupRow>> {
      absl::StatusOr<MysqlPool::Lease> conn =
          pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
      if (!conn.ok()) return conn.status();
      std::vector<GroupRow> out;
      for (const std::string& db : databases) {
        absl::StatusOr<std::vector<GroupRow>> rows =
            MysqlGroupStore(db).Read(**conn, table);
        if (!rows.ok()) return rows.status();
        std::move(rows->begin(), rows->end(), std::back_inserter(out));
      }
      return out;
    }();
    done(std::move(all));
  });
}

void Engine::DeleteGroup(absl::string_view keyspace, absl::string_view name,
                         absl::string_view group,
                         std::function<void(absl::Status)> done) {
  if (absl::Status s = ValidateGroupName(group); !s.ok()) {
    done(s);
    return;
  }
  std::string db(keyspace);
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (manager.ok()) {
    db = (*manager)->table().keyspace;
  } else if (keyspace.empty() ||
             (manager.status().code() != absl::StatusCode::kNotFound &&
              manager.status().code() !=
                  absl::StatusCode::kFailedPrecondition) ||
             std::find(options_.databases.begin(), options_.databases.end(),
                       keyspace) == options_.databases.end()) {
    // No database to look in: the table's state is the answer.
    done(manager.status());
    return;
  }
  groups_worker_.Post([this, db = std::move(db), table = std::string(name),
                       group = std::string(group), done = std::move(done)] {
    absl::Status status = [&]() -> absl::Status {
      absl::StatusOr<MysqlPool::Lease> conn =
          pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
      if (!conn.ok()) return conn.status();
      const MysqlGroupStore store(db);
      absl::StatusOr<bool> deleted = store.Delete(**conn, table, group);
      if (!deleted.ok()) return deleted.status();
      if (*deleted) return absl::OkStatus();
      absl::StatusOr<std::vector<GroupRow>> rest = store.Read(**conn, table);
      std::vector<std::string> names;
      if (rest.ok()) {
        for (const GroupRow& r : *rest) names.push_back(r.name);
      }
      return absl::NotFoundError(absl::StrCat(
          "group \"", group, "\" of `", db, "`.`", table, "` not found; ",
          !rest.ok() ? "its groups cannot be read"
          : names.empty()
              ? "it has none"
              : absl::StrCat("its groups: ", absl::StrJoin(names, ", "))));
    }();
    if (status.ok()) {
      std::shared_ptr<GroupFeed> feed;
      {
        absl::MutexLock lock(&groups_mu_);
        auto t = feeds_.find(Key{db, table});
        if (t != feeds_.end()) {
          auto g = t->second.find(group);
          if (g != t->second.end()) {
            feed = std::move(g->second);
            t->second.erase(g);
          }
          if (t->second.empty()) feeds_.erase(t);
        }
      }
      if (feed != nullptr) {
        feed->Close(absl::NotFoundError(absl::StrCat(
            "group \"", group, "\" of `", db, "`.`", table, "` was deleted")));
      }
      LogTableInfo(db, table, "group \"", group, "\" of `", db, "`.`", table,
                   "` deleted");
    }
    done(status);
  });
}

std::shared_ptr<GroupFeed> Engine::AddFeed(const GroupRow& row) {
  GroupFeed::Options options;
  options.max_batches_per_subscriber =
      options_.manager.max_batches_per_subscriber;
  if (std::shared_ptr<MessageManager> manager =
          FindLoaded(row.keyspace, row.table);
      manager != nullptr) {
    options.settings = manager->table().settings;
    if (!row.filter.empty()) {
      absl::StatusOr<RowFilter> filter = [&]() -> absl::StatusOr<RowFilter> {
        absl::StatusOr<GroupFilter> parsed =
            ParseGroupFilter(row.filter, manager->table().columns);
        if (!parsed.ok()) return parsed.status();
        return RowFilter::Bind(*parsed, manager->table().streamed);
      }();
      if (filter.ok()) {
        options.filter = *std::move(filter);
      } else {
        // Delivering more than the filter lets through is safer than
        // settling for the group what it never received.
        LogTableError(row.keyspace, row.table, "group \"", row.name,
                      "\": its filter no longer fits the table (",
                      filter.status().message(),
                      "); the group receives every insert until the "
                      "table or the group is fixed and msgqd restarts");
      }
    }
  } else {
    // Not subscribable until its table loads (FindGroup); these only keep
    // a feed without settings from timing out at once.
    options.settings.batch_size = 1;
    options.settings.ack_wait = kUnloadedAckWait;
    options.settings.min_backoff = kUnloadedAckWait;
  }
  auto feed =
      std::make_shared<GroupFeed>(row, std::move(options), clock_, jitter_);
  absl::MutexLock lock(&groups_mu_);
  auto [it, added] =
      feeds_[Key{row.keyspace, row.table}].emplace(row.name, feed);
  groups_wake_.SignalAll();  // the timer may sleep while there is none
  return it->second;
}

absl::StatusOr<std::shared_ptr<GroupFeed>> Engine::FindGroup(
    absl::string_view keyspace, absl::string_view name,
    absl::string_view group) const {
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      Find(keyspace, name);
  if (!manager.ok()) return manager.status();
  if (absl::Status s = ValidateGroupName(group); !s.ok()) return s;
  const MessageTable& table = (*manager)->table();
  absl::MutexLock lock(&groups_mu_);
  std::vector<std::string> names;
  if (auto t = feeds_.find(Key{table.keyspace, table.name});
      t != feeds_.end()) {
    if (auto g = t->second.find(std::string(group)); g != t->second.end()) {
      return g->second;
    }
    for (const auto& [n, feed] : t->second) names.push_back(n);
  }
  return absl::NotFoundError(
      GroupsNotFound(table.keyspace, table.name, group, names));
}

absl::Status Engine::GroupDeliverable(const MessageTable& table) const {
  if (!options_.binlog || !options_.manager.binlog_row_images) {
    return absl::FailedPreconditionError(
        "consumer groups are delivered from the binlog's row images: run "
        "msgqd with --binlog and --binlog_discovery=image");
  }
  if (BookkeepingOf(table, /*row_images=*/true).streamed.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "`", table.keyspace, "`.`", table.name,
        "` cannot be delivered to a consumer group yet: its rows are not "
        "rendered from the binlog's row images (msgq_order_by, "
        "msgq_concurrency_by, or a streamed column without a reproducible "
        "text form), and reading them by id for a group is not built"));
  }
  return absl::OkStatus();
}

void Engine::AckGroup(absl::string_view keyspace, absl::string_view name,
                      absl::string_view group, std::vector<std::string> ids,
                      std::function<void(absl::StatusOr<int64_t>)> done) {
  absl::StatusOr<std::shared_ptr<GroupFeed>> feed =
      FindGroup(keyspace, name, group);
  if (!feed.ok()) {
    done(feed.status());
    return;
  }
  const GroupFeed::AckResult acked = (*feed)->Ack(ids);
  if (!acked.write) {
    done(acked.settled);  // no row to delete, the floor did not move
    return;
  }
  FlushGroupThen(*std::move(feed),
                 AnswerAfterFlush(acked.settled, std::move(done)));
}

void Engine::NackGroup(absl::string_view keyspace, absl::string_view name,
                       absl::string_view group,
                       std::vector<MessageManager::Delivery> deliveries,
                       std::optional<absl::Duration> delay, std::string reason,
                       bool dead,
                       std::function<void(absl::StatusOr<NackCount>)> done) {
  absl::StatusOr<std::shared_ptr<GroupFeed>> feed =
      FindGroup(keyspace, name, group);
  if (!feed.ok()) {
    done(feed.status());
    return;
  }
  if (deliveries.size() >
      static_cast<size_t>(options_.manager.max_ids_per_ack)) {
    done(absl::InvalidArgumentError(
        absl::StrCat("too many deliveries in one nack: ", deliveries.size(),
                     " > ", options_.manager.max_ids_per_ack)));
    return;
  }
  absl::StatusOr<NackCount> count =
      (*feed)->Nack(std::move(deliveries), delay, reason, dead);
  if (!count.ok() || count->retried + count->dead == 0) {
    done(count);
    return;
  }
  // Answered once the exception rows are written.
  FlushGroupThen(*std::move(feed),
                 AnswerAfterFlush(*std::move(count), std::move(done)));
}

void Engine::RedriveGroup(absl::string_view keyspace, absl::string_view name,
                          absl::string_view group, std::vector<std::string> ids,
                          bool all,
                          std::function<void(absl::StatusOr<int64_t>)> done) {
  if (ids.empty() == !all) {
    done(absl::InvalidArgumentError(
        "redrive takes either ids or all, not both and not neither"));
    return;
  }
  absl::StatusOr<std::shared_ptr<GroupFeed>> feed =
      FindGroup(keyspace, name, group);
  if (!feed.ok()) {
    done(feed.status());
    return;
  }
  const int64_t redriven = (*feed)->Redrive(ids, all);
  if (redriven == 0) {
    done(int64_t{0});
    return;
  }
  FlushGroupThen(*std::move(feed), AnswerAfterFlush(redriven, std::move(done)));
}

void Engine::ListDeadGroup(
    absl::string_view keyspace, absl::string_view name, absl::string_view group,
    std::string after_id, int limit,
    std::function<void(absl::StatusOr<std::vector<DeadRow>>)> done) {
  if (limit < 1 || limit > kMaxDeadPage) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "dead list limit must be 1..", kMaxDeadPage, ", got ", limit)));
    return;
  }
  absl::StatusOr<std::shared_ptr<GroupFeed>> feed =
      FindGroup(keyspace, name, group);
  if (!feed.ok()) {
    done(feed.status());
    return;
  }
  // Shared with the closure: a refused closure is dropped unrun.
  auto done_shared = std::make_shared<decltype(done)>(std::move(done));
  const bool queued = groups_worker_.TryPost(
      [this, feed = *std::move(feed), after_id = std::move(after_id), limit,
       done = done_shared] {
        absl::StatusOr<std::vector<DeadRow>> out =
            [&]() -> absl::StatusOr<std::vector<DeadRow>> {
          absl::StatusOr<MysqlPool::Lease> conn =
              pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
          if (!conn.ok()) return conn.status();
          const GroupRow& row = feed->row();
          absl::StatusOr<std::vector<GroupExceptionRow>> dead =
              MysqlGroupStore(row.keyspace)
                  .ListDead(**conn, row.table, row.name, after_id, limit);
          if (!dead.ok()) return dead.status();
          std::vector<DeadRow> rows;
          rows.reserve(dead->size());
          for (GroupExceptionRow& d : *dead) {
            DeadRow r;
            r.id = std::move(d.id);
            r.epoch = d.attempts;
            r.last_error = std::move(d.last_error);
            r.time_dead = d.time_dead.value_or(0);
            rows.push_back(std::move(r));
          }
          return rows;
        }();
        (*done)(std::move(out));
      },
      kMaxQueuedDeadLists);
  if (!queued) {
    (*done_shared)(absl::ResourceExhaustedError(
        absl::StrCat("too many requests wait for the consumer groups' worker (",
                     kMaxQueuedDeadLists, "); try the dead list again later")));
  }
}

void Engine::FlushGroupThen(std::shared_ptr<GroupFeed> feed,
                            std::function<void(absl::Status)> waiter) {
  if (!feed->RequestFlush(std::move(waiter))) return;  // one is queued
  groups_worker_.Post([this, feed = std::move(feed)] { FlushGroup(*feed); });
}

void Engine::FlushGroup(GroupFeed& feed) {
  GroupFeed::Flush flush = feed.TakeFlush();
  const GroupRow& row = feed.row();
  const MysqlGroupStore store(row.keyspace);
  const absl::Status status = [&]() -> absl::Status {
    absl::StatusOr<MysqlPool::Lease> conn =
        pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
    absl::Status written = conn.status();
    if (written.ok() && (!flush.upserts.empty() || !flush.deletes.empty())) {
      written = store.WriteExceptions(**conn, row.table, row.name,
                                      flush.upserts, flush.deletes);
    }
    feed.ExceptionsWritten(flush, written);
    if (!written.ok()) return written;
    // The floor now, past the exceptions just written and any acks that
    // came meanwhile.
    std::optional<std::string> floor = feed.FloorToWrite();
    if (!floor.has_value()) return absl::OkStatus();
    // A deleted group has no floor to keep: not an error.
    absl::StatusOr<bool> moved =
        store.WriteFloor(**conn, row.table, row.name, *floor);
    if (!moved.ok()) return moved.status();
    feed.FloorWritten(*floor);
    return absl::OkStatus();
  }();
  if (!flush.fetch.empty()) {
    absl::StatusOr<std::vector<Message>> rows =
        absl::UnavailableError("the table is not loaded");
    if (!status.ok()) {
      rows = status;
    } else {
      std::shared_ptr<MessageManager> manager =
          FindLoaded(row.keyspace, row.table);
      if (manager != nullptr) {
        MysqlMessageStore reader(manager->table(), options_.mysql, pool_.get());
        rows = reader.ReadByIds(flush.fetch);
        reader.EndRound();
      }
    }
    feed.Fetched(flush.fetch, std::move(rows));
  }
  for (auto& waiter : flush.waiters) waiter(status);
}

void Engine::GroupsTimerLoop() {
  groups_mu_.Lock();
  while (!groups_stopping_) {
    // A msgqd without groups sleeps until AddFeed makes one.
    groups_wake_.WaitFor(
        &groups_mu_, feeds_.empty() ? absl::InfiniteDuration() : kGroupsTick);
    if (groups_stopping_) break;
    std::vector<std::shared_ptr<GroupFeed>> feeds;
    for (const auto& [key, groups] : feeds_) {
      for (const auto& [name, feed] : groups) feeds.push_back(feed);
    }
    groups_mu_.Unlock();
    for (std::shared_ptr<GroupFeed>& feed : feeds) {
      feed->Tick();
      if (feed->HasWork()) FlushGroupThen(std::move(feed), nullptr);
    }
    groups_mu_.Lock();
  }
  groups_mu_.Unlock();
}

absl::Status Engine::LoadGroups() {
  absl::StatusOr<MysqlPool::Lease> conn =
      pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
  if (!conn.ok()) return conn.status();
  std::vector<GroupRow> rows;
  for (const std::string& db : options_.databases) {
    absl::StatusOr<std::vector<GroupRow>> read =
        MysqlGroupStore(db).Read(**conn, "");
    if (!read.ok()) return read.status();
    std::move(read->begin(), read->end(), std::back_inserter(rows));
  }
  for (const GroupRow& row : rows) {
    absl::StatusOr<std::vector<GroupExceptionRow>> exceptions =
        MysqlGroupStore(row.keyspace)
            .ReadExceptions(**conn, row.table, row.name);
    if (!exceptions.ok()) return exceptions.status();
    AddFeed(row)->LoadExceptions(*exceptions);
    LogTableInfo(row.keyspace, row.table, "group \"", row.name, "\" of `",
                 row.keyspace, "`.`", row.table, "` resumes from \"",
                 row.floor_gtid, "\" with ", exceptions->size(),
                 " exception(s)");
  }
  absl::MutexLock lock(&groups_mu_);
  groups_pending_ = false;
  return absl::OkStatus();
}

std::string Engine::StartGroups() {
  if (absl::Status s = LoadGroups(); !s.ok()) {
    const bool retry = s.code() == absl::StatusCode::kUnavailable;
    LogWarning("consumer groups: cannot read them (", s.message(), ")",
               retry ? "; retrying at each schema reload" : "");
    absl::MutexLock lock(&groups_mu_);
    groups_pending_ = retry;
    return "";
  }
  {
    absl::MutexLock lock(&groups_mu_);
    if (feeds_.empty()) return "";
  }
  if (!options_.binlog) return "";
  absl::StatusOr<std::string> server = [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<MysqlPool::Lease> conn =
        pool_->Borrow(MysqlMessageStore::kBorrowTimeout);
    if (!conn.ok()) return conn.status();
    return MysqlGroupStore::BinlogGtidPosition(**conn);
  }();
  if (!server.ok()) return "";  // the watcher says why it cannot follow
  const std::string start = GroupsResumePosition(*server);
  if (start == *server) return "";
  replay_.emplace(*ParseGtidList(*server));
  LogInfo("binlog: reading again from \"", start, "\" up to \"", *server,
          "\" for the consumer groups' floors");
  return start;
}

bool Engine::groups_pending() const {
  absl::MutexLock lock(&groups_mu_);
  return groups_pending_;
}

std::string Engine::GroupsResumePosition(const std::string& server) const {
  absl::StatusOr<GtidList> start = ParseGtidList(server);
  if (!start.ok()) return server;
  absl::MutexLock lock(&groups_mu_);
  for (const auto& [key, groups] : feeds_) {
    for (const auto& [name, feed] : groups) {
      absl::StatusOr<GtidList> floor = ParseGtidList(feed->row().floor_gtid);
      if (!floor.ok()) continue;
      for (const auto& [domain, entry] : *floor) {
        auto it = start->find(domain);
        // A domain the server does not have yet has nothing to read again.
        if (it != start->end() && entry.sequence < it->second.sequence) {
          it->second = entry;
        }
      }
    }
  }
  return FormatGtidList(*start);
}

void Engine::FeedGroups(const std::string& db, const std::string& table,
                        const std::vector<RowChange>& changes) {
  std::vector<std::shared_ptr<GroupFeed>> feeds;
  {
    absl::MutexLock lock(&groups_mu_);
    auto t = feeds_.find(Key{db, table});
    if (t == feeds_.end()) return;
    for (const auto& [name, feed] : t->second) feeds.push_back(feed);
  }
  for (const std::shared_ptr<GroupFeed>& feed : feeds) {
    feed->OnRowChanges(changes);
  }
}

bool Engine::Replayed(const std::vector<RowChange>& changes) {
  if (!replay_.has_value() || changes.empty()) return false;
  // One rows event is one transaction's: its first change decides.
  absl::StatusOr<Gtid> gtid = ParseGtid(changes.front().gtid);
  if (!gtid.ok()) return true;
  if (replay_->Covers(gtid->domain, gtid->sequence)) return true;
  if (replay_->done()) {
    replay_.reset();
    LogInfo(
        "binlog: read again up to the start's position in every domain "
        "for the consumer groups; following live");
  }
  return false;
}

void Engine::CloseGroups(absl::Status status) {
  std::map<Key, std::map<std::string, std::shared_ptr<GroupFeed>>> feeds;
  {
    absl::MutexLock lock(&groups_mu_);
    groups_stopping_ = true;
    groups_wake_.SignalAll();
  }
  if (groups_timer_.joinable()) groups_timer_.join();
  {
    absl::MutexLock lock(&groups_mu_);
    feeds.swap(feeds_);
  }
  for (auto& [key, groups] : feeds) {
    for (auto& [name, feed] : groups) feed->Close(status);
  }
}

}  // namespace msgq
