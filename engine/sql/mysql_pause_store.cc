#include "engine/sql/mysql_pause_store.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace msgq {

MysqlPauseStore::MysqlPauseStore(const std::string& database)
    : table_(absl::StrCat(QuoteIdentifier(database), ".",
                          QuoteIdentifier("msgq_paused"))) {}

absl::StatusOr<std::set<MysqlPauseStore::Key>> MysqlPauseStore::Read(
    MysqlConnection& conn) const {
  absl::StatusOr<QueryResult> rows =
      conn.Query(absl::StrCat("SELECT keyspace, name FROM ", table_));
  if (!rows.ok()) {
    // ER_NO_SUCH_TABLE: nothing was ever paused.
    if (absl::StrContains(rows.status().message(), "MySQL error 1146:")) {
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
    if (!r.ok() &&
        absl::StrContains(r.status().message(), "MySQL error 1146:")) {
      return absl::OkStatus();  // never paused
    }
    return r.status();
  }
  absl::StatusOr<uint64_t> r = conn.Execute(absl::StrCat(
      "CREATE TABLE IF NOT EXISTS ", table_,
      " (keyspace VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
      "NULL, name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
      "NULL, since BIGINT NOT NULL DEFAULT 0,"
      " instance VARCHAR(255) NOT NULL DEFAULT '',"
      " PRIMARY KEY (keyspace, name))"
      " ENGINE=InnoDB COMMENT 'msgq: paused message tables (msgq pause)'"));
  if (!r.ok()) return r.status();
  return conn
      .Execute(absl::StrCat(
          "INSERT INTO ", table_, " (keyspace, name, since, instance) VALUES (",
          conn.QuoteString(table.first), ", ", conn.QuoteString(table.second),
          ", ", now_ns, ", ", conn.QuoteString(instance),
          ") ON DUPLICATE KEY UPDATE keyspace = keyspace"))
      .status();
}

}  // namespace msgq
