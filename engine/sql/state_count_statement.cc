#include "engine/sql/state_count_statement.h"

#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace msgq {
namespace {

absl::Status TooMany(int64_t max_groups) {
  return absl::ResourceExhaustedError(
      absl::StrCat("state count: more than ", max_groups,
                   " distinct time_next values among unacked rows"));
}

}  // namespace

std::string StateCountSql(const MessageTable& table, int64_t max_groups) {
  return absl::StrCat(
      "SELECT `priority`, `time_next`, COUNT(*) FROM ",
      QuoteIdentifier(table.keyspace), ".", QuoteIdentifier(table.name),
      " WHERE `time_acked` IS NULL GROUP BY `priority`, `time_next` LIMIT ",
      max_groups + 1);
}

absl::StatusOr<std::vector<int64_t>> PrioritiesOf(const QueryResult& result) {
  std::set<int64_t> priorities;
  for (const auto& row : result.rows) {
    int64_t priority = 0;
    if (row.empty() || !row[0].has_value() ||
        !absl::SimpleAtoi(*row[0], &priority)) {
      return absl::InternalError("state count: priority is not an integer");
    }
    priorities.insert(priority);
  }
  return std::vector<int64_t>(priorities.begin(), priorities.end());
}

std::string FutureCountSql(const MessageTable& table,
                           const std::vector<int64_t>& priorities,
                           int64_t now_ns, int64_t max_groups) {
  return absl::StrCat(
      "SELECT `epoch` > 0, `time_next`, COUNT(*) FROM ",
      QuoteIdentifier(table.keyspace), ".", QuoteIdentifier(table.name),
      " WHERE `time_acked` IS NULL AND `priority` IN (",
      absl::StrJoin(priorities, ","), ") AND `time_next` > ", now_ns,
      " GROUP BY `epoch` > 0, `time_next` LIMIT ", 2 * max_groups + 1);
}

absl::StatusOr<MessageCounts::Snapshot> ParseStateCount(
    const QueryResult& all, const QueryResult* future, int64_t now_ns,
    int64_t max_groups) {
  if (static_cast<int64_t>(all.rows.size()) > max_groups) {
    return TooMany(max_groups);
  }
  MessageCounts::Snapshot snapshot;
  for (const QueryResult* result : {&all, future}) {
    if (result == nullptr) continue;
    for (const auto& row : result->rows) {
      int64_t rows = 0;
      if (row.size() != 3 || !row[2].has_value() ||
          !absl::SimpleAtoi(*row[2], &rows)) {
        return absl::InternalError(
            "state count: expected (priority or sent, time_next, count)");
      }
      if (!row[1].has_value()) {
        if (result == &all) snapshot.dead += rows;
        continue;
      }
      int64_t time_next = 0;
      if (!row[0].has_value() || !absl::SimpleAtoi(*row[1], &time_next)) {
        return absl::InternalError("state count: time_next is not an integer");
      }
      if (result == &all) {
        if (time_next <= now_ns) {
          snapshot.unsent_by_time_next[time_next] += rows;
        }
        continue;
      }
      auto& times = *row[0] == "0" ? snapshot.unsent_by_time_next
                                   : snapshot.sent_by_time_next;
      times[time_next] += rows;
    }
  }
  if (snapshot.unsent_by_time_next.size() > static_cast<size_t>(max_groups) ||
      snapshot.sent_by_time_next.size() > static_cast<size_t>(max_groups)) {
    return TooMany(max_groups);
  }
  return snapshot;
}

}  // namespace msgq
