#include "engine/sql/peek_statement.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

absl::StatusOr<PeekOrder> ParsePeekOrder(absl::string_view order) {
  if (order == "newest") return PeekOrder::kNewest;
  if (order == "next") return PeekOrder::kNextDue;
  return absl::InvalidArgumentError(
      absl::StrCat("order must be 'newest' or 'next', not '", order, "'"));
}

absl::StatusOr<std::string> PeekSql(const MessageTable& table,
                                    const PeekRequest& request) {
  if (request.limit < 1 || request.limit > kMaxPeekLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit must be 1..", kMaxPeekLimit));
  }
  std::vector<std::string> names = {"id", "priority", "epoch", "time_next",
                                    "time_acked"};
  if (table.has_time_created) names.push_back("time_created");
  if (table.has_time_dead) names.push_back("time_dead");
  if (table.last_error_chars > 0) names.push_back("last_error");
  std::vector<std::string> select;
  for (const std::string& n : names) select.push_back(QuoteIdentifier(n));
  if (request.payload) {
    const std::set<std::string> read(names.begin(), names.end());
    for (const Column& c : table.streamed) {
      if (read.contains(c.name)) continue;
      const std::string q = QuoteIdentifier(c.name);
      select.push_back(
          absl::StrCat("LEFT(", q, ", ", kPeekPayloadBytes, ") AS ", q));
    }
  }
  std::string sql = absl::StrCat("SELECT ", absl::StrJoin(select, ", "),
                                 " FROM ", QuoteIdentifier(table.keyspace), ".",
                                 QuoteIdentifier(table.name));
  if (request.order == PeekOrder::kNewest) {
    absl::StrAppend(&sql, " ORDER BY `id` DESC");
  } else {
    absl::StrAppend(&sql,
                    " WHERE `time_acked` IS NULL ORDER BY `priority`, "
                    "`time_next`, `id`");
  }
  absl::StrAppend(&sql, " LIMIT ", request.limit);
  return sql;
}

}  // namespace msgq
