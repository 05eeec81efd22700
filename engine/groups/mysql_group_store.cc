#include "engine/groups/mysql_group_store.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/groups/group_start.h"
#include "engine/last_error_text.h"

namespace msgq {
namespace {

constexpr unsigned kDuplicateKey = 1062;  // ER_DUP_ENTRY
constexpr unsigned kNoSuchTable = 1146;   // ER_NO_SUCH_TABLE

// Now on MySQL's clock, Unix ns (NOW(6) is fixed for one statement).
constexpr char kNow[] = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)";

constexpr char kNameColumn[] =
    "VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL";

bool IsNoSuchTable(const absl::Status& s) {
  return MysqlErrorCode(s) == kNoSuchTable;
}

}  // namespace

MysqlGroupStore::MysqlGroupStore(std::string database)
    : database_(std::move(database)),
      groups_(absl::StrCat(QuoteIdentifier(database_), ".",
                           QuoteIdentifier("msgq_groups"))),
      messages_(absl::StrCat(QuoteIdentifier(database_), ".",
                             QuoteIdentifier("msgq_group_messages"))) {}

absl::Status MysqlGroupStore::Explain(MysqlConnection& conn,
                                      absl::Status status) const {
  if (status.code() != absl::StatusCode::kPermissionDenied) return status;
  std::string user = "the msgqd user";
  if (absl::StatusOr<QueryResult> who = conn.Query("SELECT CURRENT_USER()");
      who.ok() && who->rows.size() == 1 && who->rows[0][0].has_value()) {
    user = *who->rows[0][0];
    const size_t at = user.rfind('@');
    if (at != std::string::npos) {
      user = absl::StrCat("'", user.substr(0, at), "'@'", user.substr(at + 1),
                          "'");
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "MySQL refuses msgqd's consumer group tables: ", status.message(),
      ". Grant them: GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON ", groups_,
      " TO ", user, "; GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON ",
      messages_, " TO ", user, ";"));
}

absl::StatusOr<GroupRow> MysqlGroupStore::Insert(MysqlConnection& conn,
                                                 GroupRow row) const {
  row.keyspace = database_;
  const std::string insert = absl::StrCat(
      "INSERT INTO ", groups_,
      " (table_name, group_name, floor_gtid, filter, created_at, paused)"
      " VALUES (",
      conn.QuoteString(row.table), ", ", conn.QuoteString(row.name), ", ",
      conn.QuoteString(row.floor_gtid), ", ", conn.QuoteString(row.filter),
      ", ", kNow, ", 0)");
  absl::StatusOr<uint64_t> r = conn.Execute(insert);
  if (!r.ok() && IsNoSuchTable(r.status())) {
    for (const std::string& ddl :
         {absl::StrCat("CREATE TABLE IF NOT EXISTS ", groups_, " (table_name ",
                       kNameColumn, ", group_name ", kNameColumn,
                       ", floor_gtid VARCHAR(1024) CHARACTER SET ascii NOT NULL"
                       " DEFAULT '', filter TEXT CHARACTER SET utf8mb4 COLLATE"
                       " utf8mb4_bin NOT NULL, created_at BIGINT NOT NULL"
                       " DEFAULT 0, paused TINYINT NOT NULL DEFAULT 0,"
                       " settings JSON NULL, PRIMARY KEY (table_name,"
                       " group_name)) ENGINE=InnoDB COMMENT 'msgq: consumer"
                       " groups of message tables'"),
          absl::StrCat("CREATE TABLE IF NOT EXISTS ", messages_,
                       " (table_name ", kNameColumn, ", group_name ",
                       kNameColumn,
                       ", id VARBINARY(255) NOT NULL, attempts INT NOT NULL"
                       " DEFAULT 0, time_next BIGINT NULL, time_dead BIGINT"
                       " NULL, last_error VARCHAR(1024) CHARACTER SET utf8mb4"
                       " NOT NULL DEFAULT '', PRIMARY KEY (table_name,"
                       " group_name, id), INDEX due_idx (table_name,"
                       " group_name, time_dead, time_next)) ENGINE=InnoDB"
                       " COMMENT 'msgq: messages a consumer group retries or"
                       " holds dead'")}) {
      absl::StatusOr<uint64_t> created = conn.Execute(ddl);
      if (!created.ok()) return Explain(conn, created.status());
    }
    r = conn.Execute(insert);
  }
  if (!r.ok()) {
    if (MysqlErrorCode(r.status()) == kDuplicateKey) {
      return absl::AlreadyExistsError(
          absl::StrCat("group \"", row.name, "\" of `", database_, "`.`",
                       row.table, "` already exists"));
    }
    return Explain(conn, r.status());
  }
  absl::StatusOr<QueryResult> read = conn.Query(
      absl::StrCat("SELECT created_at FROM ", groups_,
                   " WHERE table_name = ", conn.QuoteString(row.table),
                   " AND group_name = ", conn.QuoteString(row.name)));
  if (!read.ok()) return Explain(conn, read.status());
  if (read->rows.size() == 1 && read->rows[0][0].has_value()) {
    (void)absl::SimpleAtoi(*read->rows[0][0], &row.created_at_ns);
  }
  return row;
}

absl::StatusOr<std::vector<GroupRow>> MysqlGroupStore::Read(
    MysqlConnection& conn, const std::string& table) const {
  std::string sql = absl::StrCat(
      "SELECT table_name, group_name, floor_gtid, filter, created_at, paused"
      " FROM ",
      groups_);
  if (!table.empty()) {
    absl::StrAppend(&sql, " WHERE table_name = ", conn.QuoteString(table));
  }
  absl::StrAppend(&sql, " ORDER BY table_name, group_name");
  absl::StatusOr<QueryResult> rows = conn.Query(sql);
  if (!rows.ok()) {
    if (IsNoSuchTable(rows.status())) return std::vector<GroupRow>();
    return Explain(conn, rows.status());
  }
  std::vector<GroupRow> out;
  for (const auto& r : rows->rows) {
    GroupRow row;
    row.keyspace = database_;
    row.table = r[0].value_or("");
    row.name = r[1].value_or("");
    row.floor_gtid = r[2].value_or("");
    row.filter = r[3].value_or("");
    if (!absl::SimpleAtoi(r[4].value_or("0"), &row.created_at_ns)) {
      row.created_at_ns = 0;
    }
    row.paused = r[5].value_or("0") != "0";
    out.push_back(std::move(row));
  }
  return out;
}

absl::StatusOr<bool> MysqlGroupStore::Delete(MysqlConnection& conn,
                                             const std::string& table,
                                             const std::string& group) const {
  const std::string where =
      absl::StrCat(" WHERE table_name = ", conn.QuoteString(table),
                   " AND group_name = ", conn.QuoteString(group));
  absl::StatusOr<uint64_t> begun = conn.Execute("START TRANSACTION");
  if (!begun.ok()) return begun.status();
  auto fail = [&](const absl::Status& s) -> absl::StatusOr<bool> {
    (void)conn.Execute("ROLLBACK");
    return Explain(conn, s);
  };
  absl::StatusOr<uint64_t> groups =
      conn.Execute(absl::StrCat("DELETE FROM ", groups_, where));
  if (!groups.ok()) {
    (void)conn.Execute("ROLLBACK");
    if (IsNoSuchTable(groups.status())) return false;
    return Explain(conn, groups.status());
  }
  absl::StatusOr<uint64_t> messages =
      conn.Execute(absl::StrCat("DELETE FROM ", messages_, where));
  if (!messages.ok() && !IsNoSuchTable(messages.status())) {
    return fail(messages.status());
  }
  absl::StatusOr<uint64_t> committed = conn.Execute("COMMIT");
  if (!committed.ok()) return fail(committed.status());
  return *groups > 0;
}

absl::StatusOr<bool> MysqlGroupStore::WriteFloor(
    MysqlConnection& conn, const std::string& table, const std::string& group,
    const std::string& floor_gtid) const {
  absl::StatusOr<uint64_t> r = conn.Execute(absl::StrCat(
      "UPDATE ", groups_, " SET floor_gtid = ", conn.QuoteString(floor_gtid),
      " WHERE table_name = ", conn.QuoteString(table),
      " AND group_name = ", conn.QuoteString(group)));
  if (!r.ok()) {
    if (IsNoSuchTable(r.status())) return false;
    return Explain(conn, r.status());
  }
  // An unchanged row counts 0 (the floor was written already): ask.
  if (*r > 0) return true;
  absl::StatusOr<QueryResult> read =
      conn.Query(absl::StrCat("SELECT 1 FROM ", groups_,
                              " WHERE table_name = ", conn.QuoteString(table),
                              " AND group_name = ", conn.QuoteString(group)));
  if (!read.ok()) return Explain(conn, read.status());
  return !read->rows.empty();
}

namespace {

std::string NullableLiteral(const std::optional<int64_t>& v) {
  return v.has_value() ? absl::StrCat(*v) : "NULL";
}

std::optional<int64_t> NullableValue(const std::optional<std::string>& v) {
  int64_t out = 0;
  if (!v.has_value() || !absl::SimpleAtoi(*v, &out)) return std::nullopt;
  return out;
}

constexpr char kExceptionColumns[] =
    "SELECT id, attempts, time_next, time_dead, last_error FROM ";

GroupExceptionRow ExceptionOf(
    const std::vector<std::optional<std::string>>& r) {
  GroupExceptionRow row;
  row.id = r[0].value_or("");
  row.attempts = NullableValue(r[1]).value_or(0);
  row.time_next = NullableValue(r[2]);
  row.time_dead = NullableValue(r[3]);
  row.last_error = r[4].value_or("");
  return row;
}

}  // namespace

absl::Status MysqlGroupStore::WriteExceptions(
    MysqlConnection& conn, const std::string& table, const std::string& group,
    const std::vector<GroupExceptionRow>& upserts,
    const std::vector<std::string>& deletes) const {
  const std::string names = absl::StrCat(conn.QuoteString(table), ", ",
                                         conn.QuoteString(group), ", ");
  for (size_t i = 0; i < upserts.size(); i += kExceptionsPerStatement) {
    std::string sql = absl::StrCat(
        "INSERT INTO ", messages_,
        " (table_name, group_name, id, attempts, time_next, time_dead,"
        " last_error) VALUES ");
    const size_t end = std::min(upserts.size(), i + kExceptionsPerStatement);
    for (size_t j = i; j < end; ++j) {
      const GroupExceptionRow& row = upserts[j];
      absl::StrAppend(
          &sql, j > i ? ", " : "", "(", names, conn.QuoteString(row.id), ", ",
          row.attempts, ", ", NullableLiteral(row.time_next), ", ",
          NullableLiteral(row.time_dead), ", ",
          conn.QuoteString(LastErrorText(row.last_error, 1024)), ")");
    }
    absl::StrAppend(&sql,
                    " ON DUPLICATE KEY UPDATE attempts = VALUES(attempts),"
                    " time_next = VALUES(time_next), time_dead ="
                    " VALUES(time_dead), last_error = IF(VALUES(last_error) ="
                    " '', last_error, VALUES(last_error))");
    absl::StatusOr<uint64_t> r = conn.Execute(sql);
    if (!r.ok()) return Explain(conn, r.status());
  }
  for (size_t i = 0; i < deletes.size(); i += kExceptionsPerStatement) {
    std::string sql = absl::StrCat(
        "DELETE FROM ", messages_,
        " WHERE table_name = ", conn.QuoteString(table),
        " AND group_name = ", conn.QuoteString(group), " AND id IN (");
    const size_t end = std::min(deletes.size(), i + kExceptionsPerStatement);
    for (size_t j = i; j < end; ++j) {
      absl::StrAppend(&sql, j > i ? ", " : "", conn.QuoteString(deletes[j]));
    }
    sql += ")";
    absl::StatusOr<uint64_t> r = conn.Execute(sql);
    if (!r.ok()) return Explain(conn, r.status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<GroupExceptionRow>> MysqlGroupStore::ReadExceptions(
    MysqlConnection& conn, const std::string& table,
    const std::string& group) const {
  absl::StatusOr<QueryResult> rows = conn.Query(absl::StrCat(
      kExceptionColumns, messages_,
      " WHERE table_name = ", conn.QuoteString(table),
      " AND group_name = ", conn.QuoteString(group), " ORDER BY id"));
  if (!rows.ok()) {
    if (IsNoSuchTable(rows.status())) return std::vector<GroupExceptionRow>();
    return Explain(conn, rows.status());
  }
  std::vector<GroupExceptionRow> out;
  out.reserve(rows->rows.size());
  for (const auto& r : rows->rows) out.push_back(ExceptionOf(r));
  return out;
}

absl::StatusOr<std::vector<GroupExceptionRow>> MysqlGroupStore::ListDead(
    MysqlConnection& conn, const std::string& table, const std::string& group,
    const std::string& after_id, int limit) const {
  std::string sql =
      absl::StrCat(kExceptionColumns, messages_,
                   " WHERE table_name = ", conn.QuoteString(table),
                   " AND group_name = ", conn.QuoteString(group),
                   " AND time_dead IS NOT NULL");
  if (!after_id.empty()) {
    absl::StrAppend(&sql, " AND id > ", conn.QuoteString(after_id));
  }
  absl::StrAppend(&sql, " ORDER BY id LIMIT ", std::max(limit, 0));
  absl::StatusOr<QueryResult> rows = conn.Query(sql);
  if (!rows.ok()) {
    if (IsNoSuchTable(rows.status())) return std::vector<GroupExceptionRow>();
    return Explain(conn, rows.status());
  }
  std::vector<GroupExceptionRow> out;
  for (const auto& r : rows->rows) out.push_back(ExceptionOf(r));
  return out;
}

absl::StatusOr<std::string> MysqlGroupStore::BinlogGtidPosition(
    MysqlConnection& conn) {
  absl::StatusOr<QueryResult> r =
      conn.Query("SELECT @@log_bin, @@gtid_binlog_pos");
  if (!r.ok()) {
    if (r.status().code() == absl::StatusCode::kUnavailable) return r.status();
    return absl::FailedPreconditionError(
        absl::StrCat("--from=latest needs MariaDB's binlog GTID position "
                     "(@@gtid_binlog_pos): ",
                     r.status().message()));
  }
  if (r->rows.size() != 1 || r->rows[0].size() != 2) {
    return absl::InternalError("@@gtid_binlog_pos: unexpected result");
  }
  if (r->rows[0][0].value_or("0") == "0") {
    return absl::FailedPreconditionError(
        "--from=latest needs the server's binary log, and log_bin is OFF");
  }
  absl::StatusOr<GtidList> list = ParseGtidList(r->rows[0][1].value_or(""));
  if (!list.ok()) {
    return absl::InternalError(
        absl::StrCat("@@gtid_binlog_pos: ", list.status().message()));
  }
  return FormatGtidList(*list);
}

}  // namespace msgq
