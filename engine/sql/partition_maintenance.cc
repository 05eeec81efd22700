#include "engine/sql/partition_maintenance.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

std::string TextLiteral(absl::string_view s) {
  // Names come from information_schema, so they are valid UTF-8.
  absl::StatusOr<std::string> lit = IdLiteral(IdKind::kText, s);
  return lit.ok() ? *std::move(lit) : "NULL";
}

void AppendDefinition(const RangePartition& p, std::string* out) {
  absl::StrAppend(out, "PARTITION ", QuoteIdentifier(p.name),
                  " VALUES LESS THAN ");
  if (p.less_than.has_value()) {
    absl::StrAppend(out, "(", *p.less_than, ")");
  } else {
    absl::StrAppend(out, "MAXVALUE");
  }
}

}  // namespace

PartitionStatements::PartitionStatements(const MessageTable& table,
                                         std::string quoted_table)
    : keyspace_(table.keyspace),
      name_(table.name),
      quoted_table_(std::move(quoted_table)) {}

std::string PartitionStatements::ListPartitions() const {
  return absl::StrCat(
      "SELECT PARTITION_NAME, PARTITION_METHOD, PARTITION_EXPRESSION, "
      "PARTITION_DESCRIPTION FROM information_schema.PARTITIONS WHERE "
      "TABLE_SCHEMA = ",
      TextLiteral(keyspace_), " AND TABLE_NAME = ", TextLiteral(name_),
      " ORDER BY PARTITION_ORDINAL_POSITION");
}

std::string PartitionStatements::Blocker(
    absl::string_view partition, int64_t purge_cutoff,
    std::optional<int64_t> dead_cutoff) const {
  std::string unacked = "`time_acked` IS NULL";
  if (dead_cutoff.has_value()) {
    unacked = absl::StrCat(
        "(`time_acked` IS NULL AND NOT (`time_next` IS NULL AND `time_dead` "
        "IS NOT NULL AND `time_dead` < ",
        *dead_cutoff, "))");
  }
  return absl::StrCat("SELECT `id`, `time_acked` FROM ", quoted_table_,
                      " PARTITION (", QuoteIdentifier(partition), ") WHERE ",
                      unacked, " OR `time_acked` >= ", purge_cutoff,
                      " ORDER BY `time_acked` LIMIT 1");
}

std::string PartitionStatements::Create(const PartitionPlan& plan) const {
  if (plan.create.empty()) return "";
  std::string sql = absl::StrCat("ALTER TABLE ", quoted_table_, " WAIT 1 ");
  if (plan.split_maxvalue.empty()) {
    absl::StrAppend(&sql, "ADD PARTITION (");
  } else {
    absl::StrAppend(&sql, "REORGANIZE PARTITION ",
                    QuoteIdentifier(plan.split_maxvalue), " INTO (");
  }
  for (size_t i = 0; i < plan.create.size(); ++i) {
    if (i > 0) sql += ", ";
    AppendDefinition(plan.create[i], &sql);
  }
  if (!plan.split_maxvalue.empty()) {
    sql += ", ";
    AppendDefinition(RangePartition{plan.split_maxvalue, std::nullopt}, &sql);
  }
  sql += ")";
  return sql;
}

std::string PartitionStatements::Drop(absl::string_view partition) const {
  return absl::StrCat("ALTER TABLE ", quoted_table_, " WAIT 1 DROP PARTITION ",
                      QuoteIdentifier(partition));
}

absl::StatusOr<PartitionReport> MaintainPartitions(
    MysqlConnection& conn, const MessageTable& table,
    const PartitionStatements& sql, int64_t now) {
  absl::StatusOr<QueryResult> listed = conn.Query(sql.ListPartitions());
  if (!listed.ok()) return listed.status();
  std::vector<RangePartition> partitions;
  for (const auto& row : listed->rows) {
    if (!row[0].has_value() ||
        !IsRangeOnTimeCreated(row[1].value_or(""), row[2].value_or(""))) {
      return absl::FailedPreconditionError(
          "the table is no longer RANGE-partitioned on time_created");
    }
    absl::StatusOr<std::optional<int64_t>> bound =
        ParsePartitionBound(row[3].value_or(""));
    if (!bound.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", *row[0], ": ", bound.status().message()));
    }
    partitions.push_back(RangePartition{*row[0], *bound});
  }

  const TableSettings& s = table.settings;
  const int64_t purge_cutoff = now - absl::ToInt64Nanoseconds(s.purge_after);
  std::optional<int64_t> dead_cutoff;
  if (table.has_time_dead && s.dead_retention > absl::ZeroDuration()) {
    dead_cutoff = now - absl::ToInt64Nanoseconds(s.dead_retention);
  }
  const PartitionPlan plan = PlanPartitions(
      partitions, now, purge_cutoff,
      absl::ToInt64Nanoseconds(s.partition_interval), s.partitions_ahead);

  PartitionReport report;
  if (!plan.create.empty()) {
    absl::StatusOr<uint64_t> created = conn.Execute(sql.Create(plan));
    if (created.ok()) {
      report.created = static_cast<int>(plan.create.size());
    } else if (created.status().code() == absl::StatusCode::kUnavailable) {
      return created.status();
    } else {
      report.create_error = created.status();
    }
  }
  for (const std::string& candidate : plan.drop_candidates) {
    absl::StatusOr<QueryResult> blocker =
        conn.Query(sql.Blocker(candidate, purge_cutoff, dead_cutoff));
    if (!blocker.ok()) return blocker.status();
    if (!blocker->rows.empty()) {
      const auto& row = blocker->rows[0];
      if (!row[1].has_value()) {  // unacked (or dead, not expired)
        report.held_back.emplace_back(candidate, row[0].value_or(""));
      }
      continue;
    }
    absl::StatusOr<uint64_t> dropped = conn.Execute(sql.Drop(candidate));
    if (!dropped.ok()) return dropped.status();
    report.dropped.push_back(candidate);
  }
  return report;
}

}  // namespace msgq
