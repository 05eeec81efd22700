#include "engine/sql/next_due_statements.h"

#include "absl/strings/str_cat.h"

namespace msgq {

std::string NextDueFirstSql(absl::string_view table) {
  return absl::StrCat("SELECT MIN(`priority`) FROM ", table,
                      " WHERE `time_acked` IS NULL");
}

std::string NextDueStepSql(absl::string_view table, int64_t priority,
                           int64_t now_ns) {
  return absl::StrCat(
      "SELECT (SELECT MIN(`time_next`) FROM ", table,
      " WHERE `time_acked` IS NULL AND `priority` = ", priority,
      " AND `time_next` > ", now_ns, "), (SELECT MIN(`priority`) FROM ", table,
      " WHERE `time_acked` IS NULL AND `priority` > ", priority, ")");
}

std::string NextDueGroupedSql(absl::string_view table, int64_t now_ns) {
  return absl::StrCat("SELECT `priority`, MIN(`time_next`) FROM ", table,
                      " WHERE `time_acked` IS NULL AND `time_next` > ", now_ns,
                      " GROUP BY `time_acked`, `priority` ORDER BY NULL");
}

}  // namespace msgq
