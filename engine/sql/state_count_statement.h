// StateCountStatement: the counting read behind MessageCounts (its load
// and its periodic reconcile), in two statements of one snapshot, both
// through the schema's poller_idx (time_acked, priority, time_next):
//
//   StateCountSql     the unacked rows grouped by (priority, time_next):
//                     the index's own order after time_acked IS NULL, so
//                     index entries only and no temporary table; one
//                     result row per group, at most `max_groups` + 1;
//   FutureCountSql    the unacked rows due after `now_ns`, by whether they
//                     were sent (epoch > 0) and time_next: a range per
//                     priority the first statement found, reading only
//                     those rows.
//
// ParseStateCount puts the first's dead rows (time_next NULL) and rows due
// by `now_ns` (their epoch unread: counted as never sent, which only
// matters once they are not due, and they stay due) and the second's rows
// into a MessageCounts::Snapshot. More than `max_groups` groups in either
// is RESOURCE_EXHAUSTED (the table keeps more distinct due times than the
// counts keep); a result not of three integer columns INTERNAL.
//
// Thread-safe (pure functions). Design: docs/design/exact-counts.md.
#ifndef MSGQ_ENGINE_SQL_STATE_COUNT_STATEMENT_H_
#define MSGQ_ENGINE_SQL_STATE_COUNT_STATEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/message_table.h"
#include "engine/queue/message_counts.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

std::string StateCountSql(const MessageTable& table, int64_t max_groups);

// The distinct priorities of StateCountSql's result (INTERNAL when one is
// not an integer).
absl::StatusOr<std::vector<int64_t>> PrioritiesOf(const QueryResult& result);

std::string FutureCountSql(const MessageTable& table,
                           const std::vector<int64_t>& priorities,
                           int64_t now_ns, int64_t max_groups);

// `future`: FutureCountSql's result, or null when no priority was found.
absl::StatusOr<MessageCounts::Snapshot> ParseStateCount(
    const QueryResult& all, const QueryResult* future, int64_t now_ns,
    int64_t max_groups);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_STATE_COUNT_STATEMENT_H_
