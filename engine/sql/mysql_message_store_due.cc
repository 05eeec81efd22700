// MysqlMessageStore: the reads of what is due later. NextDueAfter (the
// skip scan of next_due_statements.h) and, for msgq_concurrency_by, the
// rows in flight (ReadInFlight) and the poll by key (PollDueByKey; the
// statements are the fair poll's, fair_poll.h, each key's share capped by
// its room).
#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/next_due_statements.h"
#include "engine/sql/sql_literal.h"

namespace msgq {
namespace {

int64_t ParseInt(const char* value, unsigned long length) {
  int64_t v = 0;
  if (value != nullptr) {
    (void)absl::SimpleAtoi(absl::string_view(value, length), &v);
  }
  return v;
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> MysqlMessageStore::NextDueAfter(
    int64_t /*now: MySQL's clock judges*/) {
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  std::optional<int64_t> earliest;
  auto keep = [&earliest](const std::optional<std::string>& cell) {
    int64_t t = 0;
    if (!cell.has_value() || !absl::SimpleAtoi(*cell, &t)) return;
    if (!earliest.has_value() || t < *earliest) earliest = t;
  };
  // The skip scan of next_due_statements.h: a priority at a time.
  absl::StatusOr<QueryResult> r =
      (*conn)->Query(NextDueFirstSql(quoted_table_));
  if (!r.ok()) return Check(r.status());
  auto cell = [&r](size_t column) -> std::optional<std::string> {
    if (r->rows.size() != 1 || r->rows[0].size() <= column) return std::nullopt;
    return r->rows[0][column];
  };
  std::optional<std::string> next = cell(0);
  for (int probed = 0; next.has_value(); ++probed) {
    int64_t priority = 0;
    if (probed == kNextDueMaxPriorities ||
        !absl::SimpleAtoi(*next, &priority)) {
      r = (*conn)->Query(NextDueGroupedSql(quoted_table_, std::nullopt));
      if (!r.ok()) return Check(r.status());
      earliest.reset();
      for (const auto& row : r->rows) keep(row[1]);
      return earliest;
    }
    r = (*conn)->Query(NextDueStepSql(quoted_table_, priority, std::nullopt));
    if (!r.ok()) return Check(r.status());
    keep(cell(0));
    next = cell(1);
  }
  return earliest;
}

absl::StatusOr<std::vector<int64_t>> MysqlMessageStore::UnackedPriorities(
    MysqlConnection* conn) {
  std::vector<int64_t> priorities;
  absl::StatusOr<QueryResult> r = conn->Query(NextDueFirstSql(quoted_table_));
  if (!r.ok()) return Check(r.status());
  auto cell = [&r](size_t column) -> std::optional<std::string> {
    if (r->rows.size() != 1 || r->rows[0].size() <= column) return std::nullopt;
    return r->rows[0][column];
  };
  std::optional<std::string> next = cell(0);
  while (next.has_value()) {
    int64_t priority = 0;
    if (static_cast<int>(priorities.size()) == kNextDueMaxPriorities ||
        !absl::SimpleAtoi(*next, &priority)) {
      return std::vector<int64_t>();  // too many: read without
    }
    priorities.push_back(priority);
    r = conn->Query(NextDueStepSql(quoted_table_, priority, 0));
    if (!r.ok()) return Check(r.status());
    next = cell(1);
  }
  return priorities;
}

absl::StatusOr<std::vector<InFlightRow>> MysqlMessageStore::ReadInFlight(
    int64_t /*now: MySQL's clock judges*/) {
  if (!concurrency_error_.ok()) return concurrency_error_;
  std::vector<InFlightRow> out;
  if (table_.settings.concurrency <= 0) return out;
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<std::vector<int64_t>> priorities = UnackedPriorities(*conn);
  if (!priorities.ok()) return priorities.status();
  absl::Status status = (*conn)->ForEachRow(
      InFlightSql(quoted_table_, QuoteIdentifier(key_column_), *priorities,
                  std::nullopt),
      [&out](char** values, unsigned long* lengths, unsigned int n) {
        if (n < 4 || values[0] == nullptr || values[1] == nullptr) return;
        InFlightRow& row = out.emplace_back();
        row.key.emplace(values[0], lengths[0]);
        row.id.assign(values[1], lengths[1]);
        row.epoch = ParseInt(values[2], lengths[2]);
        row.time_next = ParseInt(values[3], lengths[3]);
      });
  if (!status.ok()) return Check(status);
  return out;
}

absl::StatusOr<std::vector<Message>> MysqlMessageStore::PollDueByKey(
    int64_t /*now: MySQL's clock judges*/, int64_t limit, const KeyRoom& room) {
  if (!concurrency_error_.ok()) return concurrency_error_;
  if (!fair_sql_.has_value() || table_.settings.concurrency <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(log_name_, ": has no msgq_concurrency_by"));
  }
  absl::StatusOr<MysqlConnection*> conn = Conn();
  if (!conn.ok()) return conn.status();
  if (!fair_index_known_) {
    if (absl::Status s = LearnFairIndex(*conn); !s.ok()) return s;
  }
  if (fair_index_.empty()) {
    fair_index_known_ = false;  // look again at the next poll
    return absl::FailedPreconditionError(absl::StrCat(
        log_name_,
        ": msgq_concurrency_by needs an index starting (time_acked, ",
        key_column_, "), e.g. INDEX concurrency_idx (time_acked, ", key_column_,
        ", priority, time_next)"));
  }
  if (absl::Status s = BeginSnapshotRead(); !s.ok()) return s;
  return EndSnapshotRead(FairPollDue(limit, &room));
}

}  // namespace msgq
