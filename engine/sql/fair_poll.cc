#include "engine/sql/fair_poll.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/sql/mysql_connection.h"
#include "engine/sql/sql_literal.h"

namespace msgq {

FairPollSql::FairPollSql(std::string quoted_table, std::string select_prefix,
                         const std::string& key_column, IdKind key_kind)
    : quoted_table_(std::move(quoted_table)),
      select_prefix_(std::move(select_prefix)),
      key_(QuoteIdentifier(key_column)),
      key_kind_(key_kind) {}

absl::StatusOr<std::string> FairPollSql::KeysSql(
    const std::optional<std::string>& after, int64_t limit) const {
  std::string sql = absl::StrCat("SELECT ", key_, " FROM ", quoted_table_,
                                 " WHERE `time_acked` IS NULL");
  if (after.has_value()) {
    absl::StrAppend(&sql, " AND ", key_, " > ");
    if (absl::Status s = AppendIdLiteral(key_kind_, *after, &sql); !s.ok()) {
      return s;
    }
  }
  absl::StrAppend(&sql, " GROUP BY `time_acked`, ", key_, " ORDER BY ", key_,
                  " LIMIT ", std::max<int64_t>(0, limit));
  return sql;
}

std::vector<std::string> FairPollSql::RowsSql(
    const std::vector<Slice>& slices, std::optional<int64_t> now,
    size_t max_bytes, const std::string& force_index) const {
  // The SELECT up to its WHERE, with the forced index if any.
  const std::string head =
      force_index.empty() ? select_prefix_
                          : absl::StrCat(select_prefix_, " FORCE INDEX (",
                                         QuoteIdentifier(force_index), ")");
  std::vector<std::string> out;
  std::string current;
  std::string part;
  for (const Slice& s : slices) {
    part.clear();
    absl::StrAppend(&part, "(", head, " WHERE `time_acked` IS NULL AND ", key_);
    if (!s.key.has_value()) {
      part.append(" IS NULL");
    } else {
      part.append(" = ");
      if (!AppendIdLiteral(key_kind_, *s.key, &part).ok()) continue;
    }
    absl::StrAppend(&part, " AND `time_next` <= ", NowOperand(now),
                    " ORDER BY `priority`, `time_next`, `id` LIMIT ",
                    std::max<int64_t>(0, s.offset), ", ",
                    std::max<int64_t>(0, s.count), ")");
    constexpr absl::string_view kUnion = " UNION ALL ";
    if (!current.empty() &&
        current.size() + kUnion.size() + part.size() > max_bytes) {
      out.push_back(std::move(current));
      current.clear();
    }
    if (!current.empty()) absl::StrAppend(&current, kUnion);
    current.append(part);
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

}  // namespace msgq
