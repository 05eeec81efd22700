// StateCountStatement: the counting read behind MessageCounts (its load
// and its periodic reconcile): a table's unacked rows grouped by
// time_next, dead rows (time_next NULL) among them.
//
// StateCountSql reads the unacked rows through the schema's poller_idx
// (time_acked, priority, time_next) and groups them by whether they were
// sent (epoch > 0) and by time_next: one index range (and each row's
// epoch), one result row per group, at most 2 * `max_groups` + 1 of them.
// ParseStateCount turns the result into a MessageCounts::Snapshot; more
// than `max_groups` distinct time_next values sent or never sent is
// RESOURCE_EXHAUSTED (the table keeps more distinct due times than the
// counts keep), a result not of three integer columns INTERNAL.
//
// Thread-safe (pure functions). Design: docs/design/exact-counts.md.
#ifndef MSGQ_ENGINE_SQL_STATE_COUNT_STATEMENT_H_
#define MSGQ_ENGINE_SQL_STATE_COUNT_STATEMENT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/message_table.h"
#include "engine/queue/message_counts.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

std::string StateCountSql(const MessageTable& table, int64_t max_groups);

absl::StatusOr<MessageCounts::Snapshot> ParseStateCount(
    const QueryResult& result, int64_t max_groups);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_STATE_COUNT_STATEMENT_H_
