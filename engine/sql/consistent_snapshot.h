// BeginConsistentSnapshot: one way to start a read whose rows and binlog
// position agree, for every reader that needs both (the poll and fetch
// fence, the exact counts' loading read, the XA visibility check).
//
// It runs, on the caller's connection:
//   SET TRANSACTION ISOLATION LEVEL REPEATABLE READ   (when the session's
//       level is another: WITH CONSISTENT SNAPSHOT takes a snapshot only at
//       REPEATABLE READ; the SET is for the next transaction alone)
//   START TRANSACTION WITH CONSISTENT SNAPSHOT
//   SHOW SESSION STATUS LIKE 'Binlog_snapshot_%'
// and returns the transaction's binlog position, with the server it is on
// (the connection's server_identity()): every commit at or before it is in
// the snapshot's reads and none after it is. The caller's
// statements that follow read that snapshot; the caller ends the
// transaction (COMMIT or ROLLBACK) on every path.
//
// Example:
//   absl::StatusOr<BinlogPosition> at = BeginConsistentSnapshot(conn);
//   if (!at.ok()) return at.status();   // no transaction is open
//   ... conn.Query(...) ...              // rows as of *at
//   conn.Execute("COMMIT");
//
// Errors: MySQL's, with no transaction left open. A server that runs the
// transaction but names no position (no binary log; MySQL, which has no
// Binlog_snapshot_*) gives an OK result with an unknown position
// (!known()); the transaction is open and the caller decides.
//
// GtidPositionAt turns a position into MariaDB's GTID list with
// BINLOG_GTID_POS (one domain per entry, "0-1-100,1-2-7"); it reads the
// binlog file from its start to the position, a cost that grows with the
// file. Empty when the server cannot say.
//
// Thread-compatible: the connection's owner calls them.
#ifndef MSGQ_ENGINE_SQL_CONSISTENT_SNAPSHOT_H_
#define MSGQ_ENGINE_SQL_CONSISTENT_SNAPSHOT_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/queue/binlog_position.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

absl::StatusOr<BinlogPosition> BeginConsistentSnapshot(MysqlConnection& conn);

absl::StatusOr<std::string> GtidPositionAt(MysqlConnection& conn,
                                           const BinlogPosition& at);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_CONSISTENT_SNAPSHOT_H_
