// Reads the definitions of message tables from information_schema.
//
// Two queries per reload for all configured databases (columns, then the
// PRIMARY index's columns), and one per partitioned message table. Names
// returned here are the only table and database names that ever reach SQL
// (backtick-quoted).
#ifndef MSGQ_ENGINE_SQL_SCHEMA_LOADER_H_
#define MSGQ_ENGINE_SQL_SCHEMA_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/message_table.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

struct TableDefinition {
  std::string keyspace;
  std::string name;
  std::string comment;
  std::vector<Column> columns;  // table order
  // information_schema.PARTITIONS' PARTITION_METHOD and PARTITION_EXPRESSION
  // ("RANGE", "`time_created`"); empty for a table that is not partitioned
  // or is subpartitioned. Adding or dropping partitions leaves them alone.
  std::string partition_method;
  std::string partition_expression;
  // TABLES.ENGINE, and whether information_schema.ENGINES says it has
  // transactions (true when it does not say).
  std::string engine;
  bool transactional = true;

  friend bool operator==(const TableDefinition&,
                         const TableDefinition&) = default;
};

struct SchemaSnapshot {
  // Configured databases that exist.
  std::vector<std::string> databases;
  // Every table whose comment contains "vitess_message", by (keyspace, name).
  std::vector<TableDefinition> tables;
};

// Reads message tables of `databases`: one query for all of them, and one
// more per partitioned message table (TABLES.CREATE_OPTIONS says
// "partitioned"). A table caught mid-ALTER (information_schema shows it
// without columns or partitions for a moment) is read again, a few times;
// UNAVAILABLE if it stays so. Other errors are the connection's
// (UNAVAILABLE when MySQL is unreachable).
absl::StatusOr<SchemaSnapshot> LoadSchema(
    MysqlConnection& conn, const std::vector<std::string>& databases);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_SCHEMA_LOADER_H_
