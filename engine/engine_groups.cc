// Engine: consumer groups (docs/design/consumer-groups.md). Requests are
// checked against the table's definition here (engine/groups/group_spec.h);
// their statements run on the groups worker with a pooled connection, in
// the table's database (engine/groups/mysql_group_store.h).
#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/groups/group_name.h"
#include "engine/groups/group_start.h"
#include "engine/sql/mysql_message_store.h"

namespace msgq {

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
      LogTableInfo(db, table, "group \"", group, "\" of `", db, "`.`", table,
                   "` deleted");
    }
    done(status);
  });
}

}  // namespace msgq
