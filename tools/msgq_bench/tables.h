// The bench's tables and payloads: the msgq message table (shaped like
// schema/message_table.sql), the relay's outbox table (shaped like the
// seeds' relays), the JSON payload, the preload, and small SQL helpers.
//
// Functions taking a MysqlConnection use it from the calling thread only;
// Preload opens connections of its own.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_TABLES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_TABLES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq::bench {

// A JSON object of exactly `bytes` bytes (>= 32) that names `id`:
// {"id":123,"kind":"bench","pad":"xxxx"}.
std::string Payload(int64_t id, int bytes);

// `db`.`name` with backticks.
std::string Qualified(const std::string& db, const std::string& name);

// CREATE TABLE of a message table (columns and index as in schema/); with
// `keys` > 0 also a key column k = id % keys and its index (--keys). With
// `partition_interval_s` > 0 the table is shaped like
// schema/message_table_partitioned.sql: a time_created column (set at
// insert), PRIMARY KEY (id, time_created), RANGE-partitioned on it with one
// partition up to the grid bound after tomorrow's (named as msgqd names
// them) and an empty pmax.
std::string MessageTableDdl(const std::string& qualified,
                            const std::string& comment, int keys = 0,
                            int64_t partition_interval_s = 0);
// CREATE TABLE of the relay's outbox: id, payload, processed_at (NULL until
// relayed) and the (processed_at, id) index its poll needs.
std::string OutboxTableDdl(const std::string& qualified);

// DROP TABLE IF EXISTS `qualified`, then `ddl` (its CREATE TABLE).
absl::Status Recreate(MysqlConnection& conn, const std::string& qualified,
                      const std::string& ddl);

// Recreates `qualified` with `ddl`, then fills it with ids 1..rows and their
// payloads in `payload_column` ("message" or "payload"): INSERTs of 1000
// rows, or fewer so that one stays near 4 MiB (autocommitted), on two
// connections, each inserting its own contiguous range. Returns the seconds it
// took; a connection's error otherwise.
absl::StatusOr<double> Preload(const MysqlOptions& mysql,
                               const std::string& qualified,
                               const std::string& ddl,
                               const std::string& payload_column, int64_t rows,
                               int payload_bytes);

// SELECT COUNT(*) FROM `qualified` WHERE `where`.
absl::StatusOr<int64_t> CountRows(MysqlConnection& conn,
                                  const std::string& qualified,
                                  const std::string& where);

// The data_length + index_length of `db`.`name` in MiB, from
// information_schema.TABLES after ANALYZE TABLE (InnoDB's figures are its
// persistent statistics: whole pages allocated, not bytes of rows).
absl::StatusOr<double> TableMib(MysqlConnection& conn, const std::string& db,
                                const std::string& name);

// Waits (up to 120 s) until InnoDB's purge has caught up with the undo log
// the previous phase left (history list length <= 20 transactions; the relay
// leaves ~1000 of 1000 rows each), so one phase's purge does not slow the
// next. Returns the seconds waited (0 when the server does not say); logs a
// warning and returns 120 when it gave up or the query failed.
double WaitForPurge(MysqlConnection& conn);

// The server's pid from @@pid_file, when that file is readable here; 0
// otherwise.
int ServerPid(MysqlConnection& conn);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_TABLES_H_
