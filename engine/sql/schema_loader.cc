#include "engine/sql/schema_loader.h"

#include <optional>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/status_macros.h"

namespace msgq {
namespace {

// Reads of a table that information_schema could not open just then (its
// columns or partitions come back empty while an ALTER, msgqd's own
// partition purge among them, swaps its definition) are retried this many
// times before the reload fails (UNAVAILABLE; the engine keeps its tables).
constexpr int kReadAttempts = 10;

// Sets each column's key to "pri" exactly when it is in the index named
// PRIMARY. COLUMNS.COLUMN_KEY also says "PRI" for the columns of a UNIQUE
// NOT NULL index when a table has no primary key, and the settling writes
// name the PRIMARY index (mysql_message_store.cc), which such a table lacks;
// those columns become "uni".
absl::Status MarkPrimaryKeys(MysqlConnection& conn, const std::string& in_list,
                             std::vector<TableDefinition>& tables) {
  absl::StatusOr<QueryResult> rows = conn.Query(
      absl::StrCat("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM "
                   "information_schema.STATISTICS WHERE TABLE_SCHEMA IN (",
                   in_list, ") AND INDEX_NAME = 'PRIMARY'"));
  if (!rows.ok()) return rows.status();
  // (keyspace, table, lower-case column) of every PRIMARY index column.
  absl::flat_hash_set<std::tuple<std::string, std::string, std::string>>
      primary;
  for (const auto& row : rows->rows) {
    primary.emplace(row[0].value_or(""), row[1].value_or(""),
                    absl::AsciiStrToLower(row[2].value_or("")));
  }
  for (TableDefinition& def : tables) {
    for (Column& column : def.columns) {
      const bool in_primary = primary.contains(std::make_tuple(
          def.keyspace, def.name, absl::AsciiStrToLower(column.name)));
      if (in_primary) {
        column.key = "pri";
      } else if (column.key == "pri") {
        column.key = "uni";
      }
    }
  }
  return absl::OkStatus();
}

// One read of the message tables; nullopt when a table was caught mid-ALTER.
absl::StatusOr<std::optional<std::vector<TableDefinition>>> ReadTables(
    MysqlConnection& conn, const std::string& in_list) {
  absl::StatusOr<QueryResult> rows = conn.Query(absl::StrCat(
      "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.TABLE_COMMENT, c.COLUMN_NAME, "
      "c.DATA_TYPE, c.COLUMN_TYPE, t.CREATE_OPTIONS, c.CHARACTER_SET_NAME, "
      "c.EXTRA, c.COLUMN_KEY, t.ENGINE, e.TRANSACTIONS FROM "
      "information_schema.TABLES t LEFT JOIN "
      "information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND "
      "c.TABLE_NAME = t.TABLE_NAME LEFT JOIN information_schema.ENGINES e ON "
      "e.ENGINE = t.ENGINE WHERE t.TABLE_SCHEMA IN (",
      in_list,
      ") AND t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_COMMENT LIKE "
      "'%vitess_message%' ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME, "
      "c.ORDINAL_POSITION"));
  if (!rows.ok()) return rows.status();
  std::vector<TableDefinition> tables;
  std::vector<bool> partitioned;
  for (const auto& row : rows->rows) {
    if (!row[3].has_value()) return std::nullopt;  // no columns: mid-ALTER
    const std::string& keyspace = *row[0];
    const std::string& name = *row[1];
    if (tables.empty() || tables.back().keyspace != keyspace ||
        tables.back().name != name) {
      tables.push_back(TableDefinition{
          keyspace,
          name,
          row[2].value_or(""),
          {},
          "",
          "",
          row[10].value_or(""),
          absl::AsciiStrToUpper(row[11].value_or("YES")) != "NO"});
      partitioned.push_back(absl::StrContains(
          absl::AsciiStrToLower(row[6].value_or("")), "partitioned"));
    }
    tables.back().columns.push_back(
        Column{*row[3], absl::AsciiStrToLower(row[4].value_or("")),
               row[5].value_or(""), absl::AsciiStrToLower(row[7].value_or("")),
               absl::StrContains(absl::AsciiStrToLower(row[8].value_or("")),
                                 "generated"),
               absl::AsciiStrToLower(row[9].value_or(""))});
  }
  RETURN_IF_ERROR(MarkPrimaryKeys(conn, in_list, tables));
  for (size_t i = 0; i < tables.size(); ++i) {
    if (!partitioned[i]) continue;
    TableDefinition& def = tables[i];
    absl::StatusOr<QueryResult> p = conn.Query(absl::StrCat(
        "SELECT PARTITION_METHOD, PARTITION_EXPRESSION, SUBPARTITION_METHOD "
        "FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = ",
        conn.QuoteString(def.keyspace),
        " AND TABLE_NAME = ", conn.QuoteString(def.name),
        " ORDER BY PARTITION_ORDINAL_POSITION LIMIT 1"));
    if (!p.ok()) return p.status();
    if (p->rows.empty() || !p->rows[0][0].has_value()) return std::nullopt;
    if (p->rows[0][2].has_value()) continue;  // subpartitioned: not ours
    def.partition_method = *p->rows[0][0];
    def.partition_expression = p->rows[0][1].value_or("");
  }
  return tables;
}

}  // namespace

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

  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    absl::StatusOr<std::optional<std::vector<TableDefinition>>> tables =
        ReadTables(conn, in_list);
    if (!tables.ok()) return tables.status();
    if (tables->has_value()) {
      snapshot.tables = **std::move(tables);
      return snapshot;
    }
  }
  return absl::UnavailableError(
      "a message table's columns or partitions could not be read (it is "
      "being altered); trying again at the next reload");
}

}  // namespace msgq
