#include "engine/sql/state_count_statement.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace msgq {

std::string StateCountSql(const MessageTable& table, int64_t max_groups) {
  return absl::StrCat(
      "SELECT `epoch` > 0, `time_next`, COUNT(*) FROM ",
      QuoteIdentifier(table.keyspace), ".", QuoteIdentifier(table.name),
      " WHERE `time_acked` IS NULL GROUP BY `epoch` > 0, `time_next` LIMIT ",
      2 * max_groups + 1);
}

absl::StatusOr<MessageCounts::Snapshot> ParseStateCount(
    const QueryResult& result, int64_t max_groups) {
  if (static_cast<int64_t>(result.rows.size()) > 2 * max_groups) {
    return absl::ResourceExhaustedError(
        absl::StrCat("state count: more than ", max_groups,
                     " distinct time_next values among unacked rows"));
  }
  MessageCounts::Snapshot snapshot;
  for (const auto& row : result.rows) {
    int64_t rows = 0;
    if (row.size() != 3 || !row[2].has_value() ||
        !absl::SimpleAtoi(*row[2], &rows)) {
      return absl::InternalError(
          "state count: expected (sent, time_next, count)");
    }
    if (!row[1].has_value()) {
      snapshot.dead += rows;
      continue;
    }
    int64_t time_next = 0;
    if (!row[0].has_value() || !absl::SimpleAtoi(*row[1], &time_next)) {
      return absl::InternalError("state count: time_next is not an integer");
    }
    auto& times = *row[0] == "0" ? snapshot.unsent_by_time_next
                                 : snapshot.sent_by_time_next;
    times[time_next] += rows;
  }
  if (snapshot.unsent_by_time_next.size() > static_cast<size_t>(max_groups) ||
      snapshot.sent_by_time_next.size() > static_cast<size_t>(max_groups)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("state count: more than ", max_groups,
                     " distinct time_next values among unacked rows"));
  }
  return snapshot;
}

}  // namespace msgq
