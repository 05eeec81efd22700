#include "msgq/producer.h"

#include <mysql.h>

#include <array>
#include <set>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"

namespace msgq {
namespace {

// MySQL/MariaDB error numbers the producer tells apart.
constexpr unsigned int kDupEntry = 1062;
constexpr unsigned int kBadField = 1054;
constexpr unsigned int kNoSuchTable = 1146;
constexpr unsigned int kDbAccessDenied = 1044;
constexpr unsigned int kAccessDenied = 1045;
constexpr unsigned int kTableAccessDenied = 1142;
constexpr unsigned int kColumnAccessDenied = 1143;
constexpr unsigned int kLockWaitTimeout = 1205;
constexpr unsigned int kDeadlock = 1213;
constexpr unsigned int kServerShutdown = 1053;
constexpr unsigned int kConnectionKilled = 1927;
// Values a column refuses.
constexpr unsigned int kBadNull = 1048;
constexpr unsigned int kDataTruncated = 1265;
constexpr unsigned int kOutOfRange = 1264;
constexpr unsigned int kTruncatedWrongValue = 1292;
constexpr unsigned int kNoDefault = 1364;
constexpr unsigned int kWrongValueForField = 1366;
constexpr unsigned int kDataTooLong = 1406;
constexpr unsigned int kValueOutOfRange = 1690;
constexpr unsigned int kInvalidJson = 3140;       // MySQL's json type
constexpr unsigned int kConstraintFailed = 4025;  // MariaDB's JSON_VALID check

// time_next for a delay: MySQL's clock, as plain SQL would write it.
constexpr absl::string_view kNowNs =
    "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)";

absl::StatusCode CodeOf(unsigned int number) {
  switch (number) {
    case kDupEntry:
      return absl::StatusCode::kAlreadyExists;
    case kBadField:
      return absl::StatusCode::kFailedPrecondition;
    case kNoSuchTable:
      return absl::StatusCode::kNotFound;
    case kDbAccessDenied:
    case kAccessDenied:
    case kTableAccessDenied:
    case kColumnAccessDenied:
      return absl::StatusCode::kPermissionDenied;
    case kLockWaitTimeout:
    case kDeadlock:
      return absl::StatusCode::kAborted;
    case kBadNull:
    case kOutOfRange:
    case kDataTruncated:
    case kTruncatedWrongValue:
    case kNoDefault:
    case kWrongValueForField:
    case kDataTooLong:
    case kValueOutOfRange:
    case kInvalidJson:
    case kConstraintFailed:
      return absl::StatusCode::kInvalidArgument;
    case kServerShutdown:
    case kConnectionKilled:
      return absl::StatusCode::kUnavailable;
  }
  // Client errors (2000-2999: gone away, lost): the connection is unusable.
  return number >= 2000 && number < 3000 ? absl::StatusCode::kUnavailable
                                         : absl::StatusCode::kInternal;
}

absl::Status ErrorOf(MYSQL* mysql) {
  const unsigned int number = mysql_errno(mysql);
  return absl::Status(
      CodeOf(number),
      absl::StrFormat("MySQL error %u: %s", number, mysql_error(mysql)));
}

// The last statement on `mysql` failed because the table has no `column`.
bool IsUnknownColumn(MYSQL* mysql, absl::string_view column) {
  return mysql_errno(mysql) == kBadField &&
         absl::StrContains(mysql_error(mysql), absl::StrCat("'", column, "'"));
}

bool IsPlainName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '$') {
      return false;
    }
  }
  return true;
}

// A value of the INSERT: a string literal, NULL, or an SQL expression of
// ours.
struct SqlValue {
  enum Kind { kText, kNull, kExpression } kind = kNull;
  std::string text;
};

SqlValue Text(std::string text) { return {SqlValue::kText, std::move(text)}; }

// Column name -> value; the columns of a batch are sorted by name.
using Row = std::map<std::string, SqlValue>;

struct Built {
  std::string table;  // quoted
  std::vector<Row> rows;
  std::vector<std::string> ids;
};

absl::StatusOr<std::string> QuotedTable(const TableRef& table) {
  if (!IsPlainName(table.name) ||
      (!table.keyspace.empty() && !IsPlainName(table.keyspace))) {
    return absl::InvalidArgumentError(
        absl::StrCat("table \"", table.ToString(),
                     "\" is not a plain name (letters, "
                     "digits, _ and $, 1 to 64)"));
  }
  return table.keyspace.empty()
             ? absl::StrCat("`", table.name, "`")
             : absl::StrCat("`", table.keyspace, "`.`", table.name, "`");
}

bool IsOwnColumn(absl::string_view name) {
  return name == "id" || name == "message" || name == "time_next" ||
         name == kKeyColumn || name == kTypeColumn || name == kHeadersColumn ||
         name == kDedupColumn;
}

absl::StatusOr<Row> RowOf(const OutgoingMessage& m, size_t index,
                          std::string& id) {
  Row row;
  for (const auto& [name, value] : m.columns) {
    if (!IsPlainName(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "message ", index, ": column \"", name, "\" is not a plain name"));
    }
    if (IsOwnColumn(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("message ", index, ": column ", name,
                       " is a field of OutgoingMessage, not one of columns"));
    }
    row[name] = value.has_value() ? Text(*value) : SqlValue{};
  }
  if (m.delay < absl::ZeroDuration() || m.delay == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("message ", index, ": delay ",
                     absl::FormatDuration(m.delay), " is not finite and >= 0"));
  }
  id = m.id.has_value() ? *m.id : NewUuidV7();
  row["id"] = Text(id);
  row["message"] = m.body.has_value() ? Text(*m.body) : SqlValue{};
  const int64_t delay_ns = absl::ToInt64Nanoseconds(m.delay);
  row["time_next"] = delay_ns == 0
                         ? Text("0")
                         : SqlValue{SqlValue::kExpression,
                                    absl::StrCat(kNowNs, " + ", delay_ns)};
  if (m.key.has_value()) row[std::string(kKeyColumn)] = Text(*m.key);
  if (m.type.has_value()) row[std::string(kTypeColumn)] = Text(*m.type);
  if (m.dedup_key.has_value()) {
    row[std::string(kDedupColumn)] = Text(*m.dedup_key);
  }
  if (m.headers.has_value()) {
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& [name, value] : *m.headers) {
      if (!IsValidUtf8(name) || !IsValidUtf8(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("message ", index, ": header \"",
                         absl::CHexEscape(name), "\" is not UTF-8"));
      }
      headers[name] = value;
    }
    row[std::string(kHeadersColumn)] = Text(headers.dump());
  }
  return row;
}

absl::StatusOr<Built> Build(MYSQL* mysql, const TableRef& table,
                            absl::Span<const OutgoingMessage> messages) {
  if (mysql == nullptr) {
    return absl::InvalidArgumentError("enqueue needs a connection (MYSQL*)");
  }
  Built built;
  absl::StatusOr<std::string> quoted = QuotedTable(table);
  if (!quoted.ok()) return quoted.status();
  built.table = *std::move(quoted);
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string id;
    absl::StatusOr<Row> row = RowOf(messages[i], i, id);
    if (!row.ok()) return row.status();
    built.rows.push_back(*std::move(row));
    built.ids.push_back(std::move(id));
  }
  return built;
}

std::string Quote(MYSQL* mysql, absl::string_view value) {
  std::string out(value.size() * 2 + 1, '\0');
  const unsigned long n =
      mysql_real_escape_string(mysql, out.data(), value.data(), value.size());
  out.resize(n);
  return absl::StrCat("'", out, "'");
}

absl::Status Run(MYSQL* mysql, absl::string_view sql) {
  if (mysql_real_query(mysql, sql.data(), sql.size()) != 0) {
    return ErrorOf(mysql);
  }
  return absl::OkStatus();
}

// One INSERT of `rows`; a column missing from a row is DEFAULT there.
absl::Status InsertRows(MYSQL* mysql, const std::string& table,
                        const std::vector<Row>& rows,
                        absl::string_view suffix) {
  std::set<std::string> columns;
  for (const Row& row : rows) {
    for (const auto& [name, value] : row) columns.insert(name);
  }
  std::string sql = absl::StrCat("INSERT INTO ", table, " (");
  bool first = true;
  for (const std::string& c : columns) {
    absl::StrAppend(&sql, first ? "" : ", ", "`", c, "`");
    first = false;
  }
  absl::StrAppend(&sql, ") VALUES ");
  for (size_t r = 0; r < rows.size(); ++r) {
    absl::StrAppend(&sql, r == 0 ? "(" : ", (");
    first = true;
    for (const std::string& c : columns) {
      if (!first) absl::StrAppend(&sql, ", ");
      first = false;
      auto it = rows[r].find(c);
      if (it == rows[r].end()) {
        absl::StrAppend(&sql, "DEFAULT");
      } else if (it->second.kind == SqlValue::kNull) {
        absl::StrAppend(&sql, "NULL");
      } else if (it->second.kind == SqlValue::kExpression) {
        absl::StrAppend(&sql, it->second.text);
      } else {
        absl::StrAppend(&sql, Quote(mysql, it->second.text));
      }
    }
    absl::StrAppend(&sql, ")");
  }
  absl::StrAppend(&sql, suffix);
  return Run(mysql, sql);
}

// `rows` with the trace context columns added where `columns` did not give
// them (tracestate only when set).
std::vector<Row> WithTrace(const std::vector<Row>& rows,
                           const std::string& traceparent,
                           const std::string& tracestate) {
  std::vector<Row> traced = rows;
  for (Row& row : traced) {
    if (row.contains(std::string(kTraceParentColumn))) continue;
    row[std::string(kTraceParentColumn)] = Text(traceparent);
    if (!tracestate.empty() && !row.contains(std::string(kTraceStateColumn))) {
      row[std::string(kTraceStateColumn)] = Text(tracestate);
    }
  }
  return traced;
}

// One INSERT of `rows` with the current trace context, or without it when
// the table has no trace context columns.
absl::Status InsertTraced(MYSQL* mysql, const Built& built,
                          absl::string_view suffix) {
  if (std::optional<TraceContext> trace = CurrentTraceContext()) {
    absl::Status status = InsertRows(
        mysql, built.table,
        WithTrace(built.rows, trace->traceparent, trace->tracestate), suffix);
    if (!trace->tracestate.empty() && !status.ok() &&
        IsUnknownColumn(mysql, kTraceStateColumn)) {
      status =
          InsertRows(mysql, built.table,
                     WithTrace(built.rows, trace->traceparent, ""), suffix);
    }
    if (status.ok() || !IsUnknownColumn(mysql, kTraceParentColumn)) {
      return status;
    }
    // The table has no trace context columns: enqueue without. A failed
    // statement leaves the transaction as it was.
  }
  return InsertRows(mysql, built.table, built.rows, suffix);
}

thread_local std::optional<TraceContext> current_trace;

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsAllZero(absl::string_view s) {
  return s.find_first_not_of('0') == absl::string_view::npos;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> EnqueueBatch(
    MYSQL* mysql, const TableRef& table,
    absl::Span<const OutgoingMessage> messages) {
  absl::StatusOr<Built> built = Build(mysql, table, messages);
  if (!built.ok()) return built.status();
  if (built->rows.empty()) return std::vector<std::string>{};
  absl::Status status = InsertTraced(mysql, *built, "");
  if (!status.ok()) return status;
  return std::move(built->ids);
}

absl::StatusOr<std::string> Enqueue(MYSQL* mysql, const TableRef& table,
                                    const OutgoingMessage& message) {
  absl::StatusOr<std::vector<std::string>> ids =
      EnqueueBatch(mysql, table, absl::MakeConstSpan(&message, 1));
  if (!ids.ok()) return ids.status();
  return std::move((*ids)[0]);
}

absl::StatusOr<std::vector<Enqueued>> EnqueueDedupBatch(
    MYSQL* mysql, const TableRef& table,
    absl::Span<const OutgoingMessage> messages) {
  absl::StatusOr<Built> built = Build(mysql, table, messages);
  if (!built.ok()) return built.status();
  if (built->rows.empty()) return std::vector<Enqueued>{};
  std::set<std::string> keys;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].dedup_key.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "message ", i, " has no dedup_key: EnqueueDedup needs one"));
    }
    keys.insert(*messages[i].dedup_key);
  }
  absl::Status status =
      InsertTraced(mysql, *built, " ON DUPLICATE KEY UPDATE `id` = `id`");
  if (!status.ok()) return status;
  // A locking read sees the latest committed rows, whatever the
  // transaction's snapshot.
  std::string sql =
      absl::StrCat("SELECT `", kDedupColumn, "`, `id` FROM ", built->table,
                   " WHERE `", kDedupColumn, "` IN (");
  bool first = true;
  for (const std::string& key : keys) {
    absl::StrAppend(&sql, first ? "" : ", ", Quote(mysql, key));
    first = false;
  }
  absl::StrAppend(&sql, ") LOCK IN SHARE MODE");
  if (status = Run(mysql, sql); !status.ok()) return status;
  MYSQL_RES* result = mysql_store_result(mysql);
  if (result == nullptr) return ErrorOf(mysql);
  std::map<std::string, std::string> holders;
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    const unsigned long* lengths = mysql_fetch_lengths(result);
    if (row[0] == nullptr || row[1] == nullptr) continue;
    holders[std::string(row[0], lengths[0])] = std::string(row[1], lengths[1]);
  }
  mysql_free_result(result);
  std::vector<Enqueued> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    auto holder = holders.find(*messages[i].dedup_key);
    if (holder == holders.end()) {
      return absl::AlreadyExistsError(absl::StrCat(
          "message ", i, ": id \"", built->ids[i],
          "\" is taken by a row without dedup_key \"", *messages[i].dedup_key,
          "\": nothing was inserted for it"));
    }
    out.push_back({holder->second, holder->second != built->ids[i]});
  }
  return out;
}

absl::StatusOr<Enqueued> EnqueueDedup(MYSQL* mysql, const TableRef& table,
                                      const OutgoingMessage& message) {
  absl::StatusOr<std::vector<Enqueued>> out =
      EnqueueDedupBatch(mysql, table, absl::MakeConstSpan(&message, 1));
  if (!out.ok()) return out.status();
  return std::move((*out)[0]);
}

bool IsValidTraceparent(absl::string_view tp) {
  // version "-" trace-id "-" parent-id "-" flags
  if (tp.size() != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-') {
    return false;
  }
  const absl::string_view version = tp.substr(0, 2);
  const absl::string_view trace_id = tp.substr(3, 32);
  const absl::string_view span_id = tp.substr(36, 16);
  const absl::string_view flags = tp.substr(53, 2);
  return IsLowerHex(version) && version != "ff" && IsLowerHex(trace_id) &&
         !IsAllZero(trace_id) && IsLowerHex(span_id) && !IsAllZero(span_id) &&
         IsLowerHex(flags);
}

ScopedTraceContext::ScopedTraceContext(TraceContext context)
    : previous_(std::move(current_trace)) {
  if (IsValidTraceparent(context.traceparent)) {
    current_trace = std::move(context);
  } else {
    current_trace.reset();
  }
}

ScopedTraceContext::~ScopedTraceContext() {
  current_trace = std::move(previous_);
}

std::optional<TraceContext> CurrentTraceContext() { return current_trace; }

std::string UuidV7(absl::Time now, absl::Span<const uint8_t> random) {
  std::array<uint8_t, 16> u{};
  const uint64_t ms = static_cast<uint64_t>(absl::ToUnixMillis(now));
  for (int i = 0; i < 6; ++i) u[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  for (size_t i = 0; i < 10 && i < random.size(); ++i) u[6 + i] = random[i];
  u[6] = 0x70 | (u[6] & 0x0f);  // version 7
  u[8] = 0x80 | (u[8] & 0x3f);  // variant 10
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    absl::StrAppendFormat(&out, "%02x", u[i]);
  }
  return out;
}

std::string NewUuidV7() {
  // Seeded from the OS's entropy once per thread; the ids need uniqueness,
  // not secrecy.
  thread_local absl::BitGen bitgen;
  std::array<uint8_t, 10> random;
  for (uint8_t& b : random) b = absl::Uniform<uint8_t>(bitgen);
  return UuidV7(absl::Now(), random);
}

}  // namespace msgq
