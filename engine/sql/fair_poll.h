// FairPollSql: the statements of a poll of a msgq_fair_by table.
//
// A plain `ORDER BY priority, time_next LIMIT n` fills the cache with the
// key that has the largest backlog. A fair poll instead reads in two steps:
//   1. KeysSql: the distinct keys with unacked rows, in key order, a page at
//      a time (keyset: the next page starts after the last key seen). With
//      INDEX (time_acked, key, priority, time_next) MariaDB answers
//      `GROUP BY time_acked, key` with a loose index scan, one dive per key
//      ("Using index for group-by"; DISTINCT key reads every entry).
//   2. RowsSql: per key, its best due rows by (priority, time_next, id),
//      `LIMIT offset, count`, as parenthesised SELECTs joined by UNION ALL;
//      each is one range read of the same index.
// Key values reach SQL only as literals of the column's kind (sql_literal.h);
// NULL is the key `IS NULL`. Unfair tables never use this.
//
// Thread-safe: immutable after construction.
#ifndef MSGQ_ENGINE_SQL_FAIR_POLL_H_
#define MSGQ_ENGINE_SQL_FAIR_POLL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/message_table.h"

namespace msgq {

class FairPollSql {
 public:
  // `quoted_table` is `db`.`t`; `select_prefix` is `SELECT <cols> FROM
  // <quoted_table>`; `key_column` the fair column as the table spells it,
  // `key_kind` its kind (MessageTable::fair_kind).
  FairPollSql(std::string quoted_table, std::string select_prefix,
              const std::string& key_column, IdKind key_kind);

  // SELECT DISTINCT key ... ORDER BY key LIMIT `limit`, after `after`
  // (nullopt: from the first key, NULL included). INVALID_ARGUMENT when
  // `after` is not a value of the column's kind.
  absl::StatusOr<std::string> KeysSql(const std::optional<std::string>& after,
                                      int64_t limit) const;

  // What to read of one key: rows [offset, offset + count) of its due rows
  // in (priority, time_next, id) order.
  struct Slice {
    std::optional<std::string> key;  // nullopt: NULL
    int64_t offset = 0;
    int64_t count = 0;
  };
  // The statements reading `slices` (due at `now`: nullopt for MySQL's
  // clock when the statement runs, NowOperand), each at most
  // `max_bytes` long unless a single slice is longer. `force_index` (a name
  // read from information_schema, or empty) is forced on every SELECT:
  // inside a UNION MariaDB 10.11 otherwise reads a big key's rows with a
  // full scan and a filesort instead of the index's order. A slice whose key is
  // not a value of the column's kind is left out (it cannot be named in
  // SQL; the caller's count of it stays short).
  std::vector<std::string> RowsSql(const std::vector<Slice>& slices,
                                   std::optional<int64_t> now, size_t max_bytes,
                                   const std::string& force_index = "") const;

 private:
  const std::string quoted_table_;
  const std::string select_prefix_;
  const std::string key_;  // backtick-quoted
  const IdKind key_kind_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_FAIR_POLL_H_
