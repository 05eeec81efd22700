#include "engine/sql/peek_statement.h"

#include <set>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/sql/mysql_connection.h"
#include "engine/sql/sql_literal.h"

namespace msgq {

absl::StatusOr<PeekOrder> ParsePeekOrder(absl::string_view order) {
  if (order == "newest") return PeekOrder::kNewest;
  if (order == "next") return PeekOrder::kNextDue;
  return absl::InvalidArgumentError(
      absl::StrCat("order must be 'newest' or 'next', not '", order, "'"));
}

absl::StatusOr<PeekState> ParsePeekState(absl::string_view state) {
  if (state.empty()) return PeekState::kAny;
  if (state == "ready") return PeekState::kReady;
  if (state == "scheduled") return PeekState::kScheduled;
  if (state == "in_flight") return PeekState::kInFlight;
  if (state == "dead") return PeekState::kDead;
  if (state == "acked") return PeekState::kAcked;
  return absl::InvalidArgumentError(
      absl::StrCat("state must be 'ready', 'scheduled', 'in_flight', "
                   "'dead' or 'acked', not '",
                   absl::CEscape(state.substr(0, 64)), "'"));
}

namespace {

std::vector<std::string> BookkeepingNames(const MessageTable& table) {
  std::vector<std::string> names = {"id", "priority", "epoch", "time_next",
                                    "time_acked"};
  if (table.has_time_created) names.push_back("time_created");
  if (table.has_time_dead) names.push_back("time_dead");
  if (table.last_error_chars > 0) names.push_back("last_error");
  return names;
}

// A row's state at `now_ns`, as message_counts.h defines the states.
std::string StateExpression(int64_t now_ns) {
  return absl::StrCat(
      "CASE WHEN `time_acked` IS NOT NULL THEN 'acked' WHEN `time_next` IS "
      "NULL THEN 'dead' WHEN `time_next` <= ",
      now_ns,
      " THEN 'ready' WHEN `epoch` > 0 THEN 'in_flight' ELSE 'scheduled' END "
      "AS `msgq_state`");
}

std::string StateCondition(PeekState state, int64_t now_ns) {
  switch (state) {
    case PeekState::kAny:
      return "";
    case PeekState::kReady:
      return absl::StrCat("`time_acked` IS NULL AND `time_next` <= ", now_ns);
    case PeekState::kScheduled:
      return absl::StrCat("`time_acked` IS NULL AND `time_next` > ", now_ns,
                          " AND `epoch` = 0");
    case PeekState::kInFlight:
      return absl::StrCat("`time_acked` IS NULL AND `time_next` > ", now_ns,
                          " AND `epoch` > 0");
    case PeekState::kDead:
      return "`time_acked` IS NULL AND `time_next` IS NULL";
    case PeekState::kAcked:
      return "`time_acked` IS NOT NULL";
  }
  return "";
}

}  // namespace

absl::StatusOr<std::string> PeekSql(const MessageTable& table,
                                    const PeekRequest& request) {
  if (request.limit < 1 || request.limit > kMaxPeekLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit must be 1..", kMaxPeekLimit));
  }
  if (request.state != PeekState::kAny && request.now_ns <= 0) {
    return absl::InvalidArgumentError("a state needs now_ns");
  }
  if (request.state == PeekState::kAcked &&
      request.order == PeekOrder::kNextDue) {
    return absl::InvalidArgumentError(
        "order 'next' lists unacked messages: state 'acked' needs order "
        "'newest'");
  }
  const std::vector<std::string> names = BookkeepingNames(table);
  std::vector<std::string> select;
  for (const std::string& n : names) select.push_back(QuoteIdentifier(n));
  if (request.now_ns > 0) select.push_back(StateExpression(request.now_ns));
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
  std::string where = StateCondition(request.state, request.now_ns);
  if (request.order == PeekOrder::kNextDue && where.empty()) {
    where = "`time_acked` IS NULL";
  }
  if (!where.empty()) absl::StrAppend(&sql, " WHERE ", where);
  if (request.order == PeekOrder::kNewest) {
    absl::StrAppend(&sql, " ORDER BY `id` DESC");
  } else {
    absl::StrAppend(&sql, " ORDER BY `priority`, `time_next`, `id`");
  }
  absl::StrAppend(&sql, " LIMIT ", request.limit);
  return sql;
}

namespace {

// `id` IN (<literal>, ...) for `ids`.
absl::StatusOr<std::string> IdInList(const MessageTable& table,
                                     const std::vector<std::string>& ids) {
  if (ids.empty()) return absl::InvalidArgumentError("no id given");
  std::string in = "`id` IN (";
  for (size_t i = 0; i < ids.size(); ++i) {
    absl::StatusOr<std::string> canonical = CanonicalId(table.id_kind, ids[i]);
    if (!canonical.ok()) return canonical.status();
    if (i > 0) in.append(", ");
    if (absl::Status s = AppendIdLiteral(table.id_kind, *canonical, &in);
        !s.ok()) {
      return s;
    }
  }
  in.push_back(')');
  return in;
}

std::string QuotedTable(const MessageTable& table) {
  return absl::StrCat(QuoteIdentifier(table.keyspace), ".",
                      QuoteIdentifier(table.name));
}

}  // namespace

absl::StatusOr<std::string> DeadStateSql(const MessageTable& table,
                                         const std::vector<std::string>& ids,
                                         int64_t now_ns) {
  absl::StatusOr<std::string> in = IdInList(table, ids);
  if (!in.ok()) return in.status();
  return absl::StrCat("SELECT `id`, ", StateExpression(now_ns), " FROM ",
                      QuotedTable(table), " WHERE ", *in);
}

absl::StatusOr<std::string> DeadDeleteSql(const MessageTable& table,
                                          const std::vector<std::string>& ids) {
  absl::StatusOr<std::string> in = IdInList(table, ids);
  if (!in.ok()) return in.status();
  return absl::StrCat("DELETE FROM ", QuotedTable(table), " WHERE ", *in,
                      " AND `time_acked` IS NULL AND `time_next` IS NULL");
}

absl::StatusOr<MessageRead> MessageSql(const MessageTable& table,
                                       absl::string_view id, int64_t now_ns) {
  absl::StatusOr<std::string> canonical = CanonicalId(table.id_kind, id);
  if (!canonical.ok()) return canonical.status();
  absl::StatusOr<std::string> literal = IdLiteral(table.id_kind, *canonical);
  if (!literal.ok()) return literal.status();
  MessageRead read;
  read.fixed = BookkeepingNames(table);
  std::vector<std::string> select;
  for (const std::string& n : read.fixed) select.push_back(QuoteIdentifier(n));
  select.push_back(StateExpression(now_ns));
  read.fixed.push_back("msgq_state");
  const std::set<std::string> fixed(read.fixed.begin(), read.fixed.end());
  for (const Column& c : table.columns) {
    if (fixed.contains(c.name)) continue;
    const std::string q = QuoteIdentifier(c.name);
    read.values.push_back(c.name);
    select.push_back(absl::StrCat("LEFT(", q, ", ", kMessageValueChars, ")"));
    select.push_back(
        absl::StrCat("CHAR_LENGTH(", q, ") > ", kMessageValueChars));
  }
  read.sql =
      absl::StrCat("SELECT ", absl::StrJoin(select, ", "), " FROM ",
                   QuoteIdentifier(table.keyspace), ".",
                   QuoteIdentifier(table.name), " WHERE `id` = ", *literal);
  return read;
}

}  // namespace msgq
