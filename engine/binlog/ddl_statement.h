// ParseDdl: which tables a statement from the binlog's QUERY events
// replaces, empties, renames or removes, read just far enough to know the
// statement kind and the table names.
//
// Recognised (keywords in any case, comments anywhere, MariaDB executable
// comments /*!NNNNN ... */ and /*M!NNNNN ... */ read as code):
//   TRUNCATE [TABLE] t [WAIT n | NOWAIT]
//   DROP TABLE [IF EXISTS] t [, t ...] ...      (not DROP TEMPORARY TABLE)
//   ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] t ...
//     (kPartitionMaintenance when what follows the name, after an optional
//     WAIT n | NOWAIT, is ADD, DROP, REORGANIZE, TRUNCATE, COALESCE,
//     ANALYZE, CHECK, OPTIMIZE, REBUILD or REPAIR PARTITION: partitions
//     come and go but the table's columns and rows' identities stay, so the
//     engine keeps the table's manager; msgqd's own partition purge issues
//     such statements every purge step. Everything else that changes
//     partitioning -- PARTITION BY, REMOVE PARTITIONING, EXCHANGE or
//     CONVERT PARTITION, which can bring rows in without row events -- is
//     kAlter.)
//   RENAME TABLE[S] [IF EXISTS] a [WAIT n | NOWAIT] TO b [, c TO d ...]
//   CREATE OR REPLACE TABLE [IF NOT EXISTS] t ...  (not TEMPORARY)
//   CREATE TABLE [IF NOT EXISTS] t ...             (not TEMPORARY)
// A name is `t`, t, db.t or `db`.`t` (`` inside backticks is one `, "t"
// is accepted too for ANSI_QUOTES); an unqualified name is in the query
// event's default database. RENAME reports both sides. Anything else
// (including a statement cut short) yields kind kNone and no tables.
//
// Example:
//   DdlStatement d = ParseDdl("app", "DROP TABLE IF EXISTS `q`, other.r");
//   // d.kind == kDrop, d.tables == {{"app", "q"}, {"other", "r"}}
//
// Thread-safe (a pure function).
#ifndef MSGQ_ENGINE_BINLOG_DDL_STATEMENT_H_
#define MSGQ_ENGINE_BINLOG_DDL_STATEMENT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace msgq {

struct TableName {
  std::string db;
  std::string table;
  bool operator==(const TableName& o) const {
    return db == o.db && table == o.table;
  }
};

struct DdlStatement {
  enum Kind {
    kNone,
    kTruncate,
    kDrop,
    kAlter,
    kRename,
    kCreateOrReplace,
    kCreate,
    kPartitionMaintenance,
  };
  Kind kind = kNone;
  std::vector<TableName> tables;
};

DdlStatement ParseDdl(absl::string_view default_db, absl::string_view sql);

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_DDL_STATEMENT_H_
