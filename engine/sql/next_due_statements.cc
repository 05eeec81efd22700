#include "engine/sql/next_due_statements.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/sql/sql_literal.h"

namespace msgq {

std::string NextDueFirstSql(absl::string_view table) {
  return absl::StrCat("SELECT MIN(`priority`) FROM ", table,
                      " WHERE `time_acked` IS NULL");
}

std::string NextDueStepSql(absl::string_view table, int64_t priority,
                           std::optional<int64_t> now_ns) {
  return absl::StrCat("SELECT (SELECT MIN(`time_next`) FROM ", table,
                      " WHERE `time_acked` IS NULL AND `priority` = ", priority,
                      " AND `time_next` > ", NowOperand(now_ns),
                      "), (SELECT MIN(`priority`) FROM ", table,
                      " WHERE `time_acked` IS NULL AND `priority` > ", priority,
                      ")");
}

std::string NextDueGroupedSql(absl::string_view table,
                              std::optional<int64_t> now_ns) {
  return absl::StrCat("SELECT `priority`, MIN(`time_next`) FROM ", table,
                      " WHERE `time_acked` IS NULL AND `time_next` > ",
                      NowOperand(now_ns),
                      " GROUP BY `time_acked`, `priority` ORDER BY NULL");
}

std::string InFlightSql(absl::string_view table, absl::string_view key,
                        const std::vector<int64_t>& priorities,
                        std::optional<int64_t> now_ns) {
  return absl::StrCat("SELECT ", key, ", `id`, `epoch`, `time_next` FROM ",
                      table, " WHERE `time_acked` IS NULL",
                      priorities.empty()
                          ? std::string()
                          : absl::StrCat(" AND `priority` IN (",
                                         absl::StrJoin(priorities, ","), ")"),
                      " AND `time_next` > ", NowOperand(now_ns),
                      " AND `epoch` > 0 AND ", key, " IS NOT NULL");
}

}  // namespace msgq
