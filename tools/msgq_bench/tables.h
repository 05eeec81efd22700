// The bench's tables and payloads: the msgq message table (shaped like
// schema/message_table.sql), the relay's outbox table (shaped like the
// seeds' relays), the 60-byte JSON payload, and small SQL helpers.
//
// Functions taking a MysqlConnection use it from the calling thread only.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_TABLES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_TABLES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_connection.h"

namespace msgq::bench {

// A JSON object of exactly `bytes` bytes (>= 32) that names `id`.
std::string Payload(int64_t id, int bytes);

// `db`.`name` with backticks.
std::string Qualified(const std::string& db, const std::string& name);

// CREATE TABLE of a message table (columns and index as in schema/).
std::string MessageTableDdl(const std::string& qualified,
                            const std::string& comment);
// CREATE TABLE of the relay's outbox: id, payload, processed_at (NULL until
// relayed) and the (processed_at, id) index its poll needs.
std::string OutboxTableDdl(const std::string& qualified);

// The single integer of a one-row, one-column query.
absl::StatusOr<int64_t> QueryInt(MysqlConnection& conn, const std::string& sql);

// InnoDB history list length (undo logs of committed transactions not yet
// purged) at which a phase counts as settled. It counts transactions, not
// rows: the relay leaves ~1000 transactions of 1000 rows each.
inline constexpr int64_t kSettledHistory = 20;

// Waits until InnoDB's purge has caught up with the undo log the previous
// phase left (history list length below `max_history`), so background purge
// of one phase does not slow the next. Returns the seconds waited, or
// DEADLINE_EXCEEDED after `timeout` (callers report it and go on).
absl::StatusOr<double> WaitForPurge(MysqlConnection& conn, int64_t max_history,
                                    absl::Duration timeout);

// The server's pid from @@pid_file, when that file is readable here; 0
// otherwise.
int ServerPid(MysqlConnection& conn);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_TABLES_H_
