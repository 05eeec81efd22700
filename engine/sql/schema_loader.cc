#include "engine/sql/schema_loader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace msgq {

absl::StatusOr<SchemaSnapshot> LoadSchema(
    MysqlConnection& conn, const std::vector<std::string>& databases) {
  SchemaSnapshot snapshot;
  if (databases.empty()) return snapshot;
  std::vector<std::string> quoted;
  for (const std::string& db : databases)
    quoted.push_back(conn.QuoteString(db));
  const std::string in_list = absl::StrJoin(quoted, ",");

  absl::StatusOr<QueryResult> dbs = conn.Query(absl::StrCat(
      "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME "
      "IN (",
      in_list, ")"));
  if (!dbs.ok()) return dbs.status();
  for (const auto& row : dbs->rows) snapshot.databases.push_back(*row[0]);

  absl::StatusOr<QueryResult> rows = conn.Query(absl::StrCat(
      "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.TABLE_COMMENT, c.COLUMN_NAME, "
      "c.DATA_TYPE, c.COLUMN_TYPE FROM information_schema.TABLES t JOIN "
      "information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND "
      "c.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_SCHEMA IN (",
      in_list,
      ") AND t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_COMMENT LIKE "
      "'%vitess_message%' ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME, "
      "c.ORDINAL_POSITION"));
  if (!rows.ok()) return rows.status();
  for (const auto& row : rows->rows) {
    const std::string& keyspace = *row[0];
    const std::string& name = *row[1];
    if (snapshot.tables.empty() ||
        snapshot.tables.back().keyspace != keyspace ||
        snapshot.tables.back().name != name) {
      snapshot.tables.push_back(
          TableDefinition{keyspace, name, row[2].value_or(""), {}});
    }
    snapshot.tables.back().columns.push_back(
        Column{*row[3], absl::AsciiStrToLower(row[4].value_or("")),
               row[5].value_or("")});
  }
  return snapshot;
}

}  // namespace msgq
