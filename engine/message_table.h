// MessageTable: everything the engine knows about one loaded message table,
// built from information_schema (columns, comment) and validated.
//
// BuildMessageTable() is the single place a table definition is judged: it
// parses the comment's directives and checks the required columns. Its errors
// name the table and the cause; the engine shows them in ListTables and
// returns them (FAILED_PRECONDITION) to requests on the table.
//
// Thread-safe: a MessageTable is an immutable value once built.
#ifndef MSGQ_ENGINE_MESSAGE_TABLE_H_
#define MSGQ_ENGINE_MESSAGE_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/table_settings.h"

namespace msgq {

struct Column {
  std::string name;
  // information_schema.COLUMNS.DATA_TYPE, lower case ("bigint", "json").
  std::string data_type;
  // information_schema.COLUMNS.COLUMN_TYPE ("bigint(20) unsigned").
  std::string column_type;
  // information_schema.COLUMNS.CHARACTER_SET_NAME, lower case; empty for
  // columns without one (numbers, binary strings).
  std::string charset;
  // A generated (virtual or stored) column (COLUMNS.EXTRA).
  bool generated = false;
  // information_schema.COLUMNS.COLUMN_KEY, lower case: "pri" for a column
  // of the primary key, "uni", "mul" or empty.
  std::string key;

  friend bool operator==(const Column&, const Column&) = default;
};

// How an id is validated and written into SQL.
enum class IdKind {
  kSignedInteger,    // decimal literal, validated as int64
  kUnsignedInteger,  // decimal literal, validated as uint64
  kBinary,           // hex literal X'..'
  kText,             // quoted, escaped string literal
};

struct MessageTable {
  std::string keyspace;  // the database
  std::string name;
  TableSettings settings;
  std::vector<Column> columns;   // all columns, table order
  std::vector<Column> streamed;  // the streamed columns, id first
  IdKind id_kind = IdKind::kText;
  // msgq's optional columns (docs/tables.md#optional-columns): time_created
  // (integer, Unix ns: when first enqueued, for msgq_max_age), time_dead
  // (integer, Unix ns: when it died, for msgq_dead_retention; never
  // streamed), last_error (char/varchar/text: the last failure's reason,
  // stored truncated to last_error_chars characters; 0 = no such column).
  bool has_time_created = false;
  bool has_time_dead = false;
  int last_error_chars = 0;
  // The id is a column of the primary key (Column::key "pri"): settling
  // writes name the PRIMARY index (engine/sql/mysql_message_store.cc).
  bool id_in_primary_key = false;
  // The primary key is the id alone: settling writes are single-table
  // UPDATEs, each row a lookup of the whole key.
  bool primary_key_is_id = false;
  // With msgq_fair_by: how the fair column's values are written into SQL
  // (integer columns as integers, char/varchar as text, binary as bytes).
  IdKind fair_kind = IdKind::kText;
  // RANGE-partitioned on time_created (engine/queue/partition_plan.h): acked
  // rows are purged by dropping whole partitions instead of DELETE. Set by
  // the engine from the table's partitioning, not by BuildMessageTable.
  bool purge_by_partition = false;
};

// Builds and validates a message table. FAILED_PRECONDITION, with a message
// "table `db`.`t`: <cause>", when the directives are invalid (see
// directives.h), a required column (id, priority, time_next, epoch,
// time_acked) is missing, vt_message_cols names a missing column, one of
// msgq's optional columns has the wrong type (time_created and time_dead
// must be integers, last_error text), msgq_max_age is set without a
// time_created column or msgq_dead_retention without a time_dead column,
// or msgq_order_by / msgq_fair_by / msgq_concurrency_by name a missing
// column or one of msgq's own (msgq_fair_by and msgq_concurrency_by also one
// not integer, char, varchar, binary or varbinary: ResolveConcurrencyKey,
// concurrency_column.h), or msgq_dedup_window is set and the table has no
// time_created, no dedup_key column, one that is not char, varchar, binary
// or varbinary, or one whose Column::key is not "uni" (no unique index of
// that column alone; docs/design/dedup.md). The key columns are stored as
// the table spells them. Indexes are not seen here beyond Column::key
// (information_schema.STATISTICS is not read at load).
absl::StatusOr<MessageTable> BuildMessageTable(absl::string_view keyspace,
                                               absl::string_view name,
                                               absl::string_view comment,
                                               std::vector<Column> columns);

// True when `s` is the canonical decimal form of a value of an integer
// `kind`; false for every other kind.
bool IsCanonicalInteger(IdKind kind, absl::string_view s);

// Validates an id given by a client and returns its canonical text form (the
// form the stream uses: "7" for "007" on an integer id). INVALID_ARGUMENT when
// it is empty, not a valid integer for an integer id column, or not UTF-8 for
// a text id column.
absl::StatusOr<std::string> CanonicalId(IdKind kind, absl::string_view id);
// CanonicalId of every id, in place; the first error, ids then half done.
absl::Status CanonicalizeIds(IdKind kind, std::vector<std::string>& ids);

}  // namespace msgq

#endif  // MSGQ_ENGINE_MESSAGE_TABLE_H_
