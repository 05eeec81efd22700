#include "engine/sql/due_depth_statement.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace msgq {

std::string DueDepthSql(const MessageTable& table, int64_t now_ns,
                        int64_t cap) {
  return absl::StrCat(
      "SELECT COUNT(*), MIN(NULLIF(`time_next`, 0)) FROM (SELECT `time_next` "
      "FROM ",
      QuoteIdentifier(table.keyspace), ".", QuoteIdentifier(table.name),
      " WHERE `time_acked` IS NULL AND `time_next` <= ", now_ns, " LIMIT ",
      cap + 1, ") AS `due`");
}

absl::StatusOr<DueDepth> ParseDueDepth(const QueryResult& result, int64_t cap) {
  if (result.rows.size() != 1 || result.rows[0].size() != 2 ||
      !result.rows[0][0].has_value()) {
    return absl::InternalError("due depth: expected one row of two columns");
  }
  DueDepth depth;
  if (!absl::SimpleAtoi(*result.rows[0][0], &depth.count)) {
    return absl::InternalError("due depth: the count is not an integer");
  }
  if (depth.count > cap) {
    depth.count = cap;
    depth.capped = true;
  }
  int64_t oldest = 0;
  if (result.rows[0][1].has_value() &&
      absl::SimpleAtoi(*result.rows[0][1], &oldest)) {
    depth.oldest_due_ns = oldest;
  }
  return depth;
}

}  // namespace msgq
