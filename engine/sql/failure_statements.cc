#include "engine/sql/failure_statements.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

// The epoch a row has after the send of a delivery streamed with `epoch`
// (a client's value: int64 max must not overflow).
std::string NextEpoch(int64_t epoch) {
  if (epoch == std::numeric_limits<int64_t>::max()) {
    return "9223372036854775808";
  }
  return absl::StrCat(epoch + 1);
}

constexpr absl::string_view kPending =
    " AND `time_acked` IS NULL AND `time_next` IS NOT NULL";
constexpr absl::string_view kDead =
    " `time_acked` IS NULL AND `time_next` IS NULL";

}  // namespace

FailureStatements::FailureStatements(const MessageTable& table,
                                     std::string quoted_table)
    : quoted_table_(std::move(quoted_table)),
      has_time_dead_(table.has_time_dead),
      last_error_chars_(table.last_error_chars),
      max_attempts_(table.settings.max_attempts),
      max_age_ns_(table.has_time_created
                      ? absl::ToInt64Nanoseconds(table.settings.max_age)
                      : 0),
      dead_retention_ns_(
          absl::ToInt64Nanoseconds(table.settings.dead_retention)),
      dedup_window_ns_(absl::ToInt64Nanoseconds(table.settings.dedup_window)) {
  int next = 2;  // id, epoch
  if (last_error_chars_ > 0) last_error_column_ = next++;
  if (has_time_dead_) time_dead_column_ = next++;
  if (table.has_time_created) time_created_column_ = next++;
}

std::string FailureStatements::LastErrorSet(absl::string_view reason) const {
  if (last_error_chars_ <= 0 || reason.empty()) return "";
  // Valid UTF-8 after LastErrorText, so the literal cannot fail.
  std::string literal =
      IdLiteral(IdKind::kText,
                LastErrorText(reason, last_error_chars_, repertoire_))
          .value_or("''");
  return absl::StrCat(", `last_error` = LEFT(", literal, ", ",
                      last_error_chars_, ")");
}

std::string FailureStatements::DeadSet(int64_t now,
                                       absl::string_view reason) const {
  std::string set = "`time_next` = NULL";
  if (has_time_dead_) absl::StrAppend(&set, ", `time_dead` = ", now);
  set += LastErrorSet(reason);
  return set;
}

std::vector<InList> FailureStatements::Nack(int64_t now, int64_t epoch,
                                            std::optional<int64_t> time_next,
                                            absl::string_view reason) const {
  const std::string update = absl::StrCat("UPDATE ", quoted_table_, " SET ");
  const std::string where = " WHERE `id` IN (";
  const std::string condition =
      absl::StrCat(") AND `epoch` = ", NextEpoch(epoch), kPending);
  std::vector<InList> out;
  const std::string dead_prefix =
      absl::StrCat(update, DeadSet(now, reason), where);
  if (!time_next.has_value()) {
    out.push_back({dead_prefix, condition, /*counts_dead=*/true});
    return out;
  }
  std::string limits;
  if (max_attempts_ > 0) {
    absl::StrAppend(&limits, "`epoch` >= ", max_attempts_);
  }
  if (max_age_ns_ > 0) {
    absl::StrAppend(&limits, limits.empty() ? "" : " OR ", "`time_created` < ",
                    now - max_age_ns_);
  }
  if (!limits.empty()) {
    out.push_back({dead_prefix, absl::StrCat(condition, " AND (", limits, ")"),
                   /*counts_dead=*/true});
  }
  out.push_back({absl::StrCat(update, "`time_next` = ", *time_next,
                              LastErrorSet(reason), where),
                 condition, /*counts_dead=*/false});
  return out;
}

InList FailureStatements::Extend(int64_t epoch, int64_t time_next) const {
  return {absl::StrCat("UPDATE ", quoted_table_,
                       " SET `time_next` = ", time_next, " WHERE `id` IN ("),
          absl::StrCat(") AND `epoch` = ", NextEpoch(epoch), kPending),
          /*counts_dead=*/false};
}

InList FailureStatements::Redrive(int64_t now) const {
  return {absl::StrCat("UPDATE ", quoted_table_, " SET `time_next` = ", now,
                       ", `epoch` = 0",
                       has_time_dead_ ? ", `time_dead` = NULL" : "",
                       " WHERE `id` IN ("),
          absl::StrCat(") AND", kDead), /*counts_dead=*/false};
}

std::string FailureStatements::RedriveAll(int64_t now) const {
  return absl::StrCat(
      "UPDATE ", quoted_table_, " SET `time_next` = ", now, ", `epoch` = 0",
      has_time_dead_ ? ", `time_dead` = NULL" : "", " WHERE", kDead);
}

std::string KeepDedupKeys(int64_t dedup_window_ns, int64_t now) {
  if (dedup_window_ns <= 0) return "";
  return absl::StrCat(
      " AND (`dedup_key` IS NULL OR `time_created` IS NULL OR "
      "`time_created` < ",
      now - dedup_window_ns, ")");
}

std::string FailureStatements::PurgeDead(int64_t cutoff, int limit) const {
  return absl::StrCat(
      "DELETE FROM ", quoted_table_, " WHERE", kDead, " AND `time_dead` < ",
      cutoff, KeepDedupKeys(dedup_window_ns_, cutoff + dead_retention_ns_),
      " LIMIT ", std::max(limit, 0));
}

std::string FailureStatements::CountDead() const {
  return absl::StrCat("SELECT COUNT(*) FROM ", quoted_table_, " WHERE", kDead);
}

std::string FailureStatements::ListDead(absl::string_view after_literal,
                                        int limit) const {
  std::string sql = "SELECT `id`, `epoch`";
  if (last_error_column_ >= 0) sql += ", `last_error`";
  if (time_dead_column_ >= 0) sql += ", `time_dead`";
  if (time_created_column_ >= 0) sql += ", `time_created`";
  absl::StrAppend(&sql, " FROM ", quoted_table_, " WHERE", kDead);
  if (!after_literal.empty())
    absl::StrAppend(&sql, " AND `id` > ", after_literal);
  absl::StrAppend(&sql, " ORDER BY `id` LIMIT ", std::max(limit, 0));
  return sql;
}

}  // namespace msgq
