#include "engine/sql/consistent_snapshot.h"

#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace msgq {

absl::StatusOr<BinlogPosition> BeginConsistentSnapshot(MysqlConnection& conn) {
  if (conn.isolation_level() != "REPEATABLE READ") {
    absl::StatusOr<uint64_t> set =
        conn.Execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    if (!set.ok()) return set.status();
  }
  absl::StatusOr<uint64_t> begun =
      conn.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT");
  if (!begun.ok()) return begun.status();
  absl::StatusOr<QueryResult> status =
      conn.Query("SHOW SESSION STATUS LIKE 'Binlog_snapshot_%'");
  if (!status.ok()) {
    (void)conn.Execute("ROLLBACK");
    return status.status();
  }
  BinlogPosition at;
  uint64_t offset = 0;
  bool offset_known = false;
  for (const auto& row : status->rows) {
    if (row.size() != 2 || !row[0].has_value() || !row[1].has_value()) {
      continue;
    }
    if (absl::EqualsIgnoreCase(*row[0], "Binlog_snapshot_file")) {
      at.file = *row[1];
    } else if (absl::EqualsIgnoreCase(*row[0], "Binlog_snapshot_position")) {
      offset_known = absl::SimpleAtoi(*row[1], &offset);
    }
  }
  if (!offset_known) return BinlogPosition{};
  at.offset = offset;
  at.server = conn.server_identity();
  return at;  // file "" (no binary log): unknown
}

absl::StatusOr<std::string> GtidPositionAt(MysqlConnection& conn,
                                           const BinlogPosition& at) {
  if (!at.known()) return std::string();
  absl::StatusOr<QueryResult> gtid =
      conn.Query(absl::StrCat("SELECT BINLOG_GTID_POS(",
                              conn.QuoteString(at.file), ", ", at.offset, ")"));
  if (!gtid.ok()) return gtid.status();
  if (gtid->rows.size() != 1 || gtid->rows[0].size() != 1 ||
      !gtid->rows[0][0].has_value()) {
    return std::string();
  }
  return *gtid->rows[0][0];
}

}  // namespace msgq
