#include "engine/sql/mysql_pause_store.h"

#include "absl/strings/str_cat.h"

namespace msgq {
namespace {

constexpr unsigned kNoSuchTable = 1146;  // ER_NO_SUCH_TABLE

bool IsNoSuchTable(const absl::Status& status) {
  return MysqlErrorCode(status) == kNoSuchTable;
}

}  // namespace

MysqlPauseStore::MysqlPauseStore(const std::string& database)
    : table_(absl::StrCat(QuoteIdentifier(database), ".",
                          QuoteIdentifier("msgq_paused"))) {}

absl::StatusOr<std::set<MysqlPauseStore::Key>> MysqlPauseStore::Read(
    MysqlConnection& conn) const {
  absl::StatusOr<QueryResult> rows =
      conn.Query(absl::StrCat("SELECT keyspace, name FROM ", table_));
  if (!rows.ok()) {
    // Nothing was ever paused.
    if (IsNoSuchTable(rows.status())) {
      return std::set<Key>();
    }
    return rows.status();
  }
  std::set<Key> out;
  for (const auto& row : rows->rows) {
    out.emplace(row[0].value_or(""), row[1].value_or(""));
  }
  return out;
}

absl::Status MysqlPauseStore::Write(MysqlConnection& conn, const Key& table,
                                    bool paused, int64_t now_ns,
                                    const std::string& instance) const {
  const std::string where =
      absl::StrCat(" WHERE keyspace = ", conn.QuoteString(table.first),
                   " AND name = ", conn.QuoteString(table.second));
  if (!paused) {
    absl::StatusOr<uint64_t> r =
        conn.Execute(absl::StrCat("DELETE FROM ", table_, where));
    if (!r.ok() && IsNoSuchTable(r.status())) {
      return absl::OkStatus();  // never paused
    }
    return r.status();
  }
  const std::string insert = absl::StrCat(
      "INSERT INTO ", table_, " (keyspace, name, since, instance) VALUES (",
      conn.QuoteString(table.first), ", ", conn.QuoteString(table.second), ", ",
      now_ns, ", ", conn.QuoteString(instance),
      ") ON DUPLICATE KEY UPDATE keyspace = keyspace");
  absl::StatusOr<uint64_t> r = conn.Execute(insert);
  // The table is created only when missing: CREATE TABLE IF NOT EXISTS
  // asks for the CREATE grant even when it exists, and a table created
  // beforehand by an administrator needs none.
  if (r.ok() || !IsNoSuchTable(r.status())) return r.status();
  r = conn.Execute(absl::StrCat(
      "CREATE TABLE IF NOT EXISTS ", table_,
      " (keyspace VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
      "NULL, name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
      "NULL, since BIGINT NOT NULL DEFAULT 0,"
      " instance VARCHAR(255) NOT NULL DEFAULT '',"
      " PRIMARY KEY (keyspace, name))"
      " ENGINE=InnoDB COMMENT 'msgq: paused message tables (msgq pause)'"));
  if (!r.ok()) return r.status();
  return conn.Execute(insert).status();
}

}  // namespace msgq
