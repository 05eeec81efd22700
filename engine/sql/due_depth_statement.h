// DueDepthStatement: how many of a table's messages are due now and how
// long the oldest has waited, read from an index alone, never the table.
//
// DueDepthSql counts the unacked rows with time_next <= now through the
// schema's poller_idx (time_acked, priority, time_next): the inner SELECT
// reads only index entries with time_acked NULL (EXPLAIN: ref on
// poller_idx, "Using where; Using index"; tests/metrics_test.cc checks it)
// and stops after cap + 1 due ones, so a large backlog costs at most cap + 1
// matches (plus the unacked rows scheduled later that the range passes
// over). A count above `cap` is reported as `cap` with capped = true. The
// oldest due time is the smallest time_next > 0 among the rows read: rows
// enqueued with time_next 0 (the column default, "due since always") carry
// no due time; when capped it is the oldest of the rows read, not
// necessarily of the table.
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_SQL_DUE_DEPTH_STATEMENT_H_
#define MSGQ_ENGINE_SQL_DUE_DEPTH_STATEMENT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/message_table.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

struct DueDepth {
  int64_t count = 0;    // due rows, at most the cap
  bool capped = false;  // more than the cap are due
  // The smallest time_next > 0 among them (Unix ns); nullopt when none.
  std::optional<int64_t> oldest_due_ns;
};

// The statement for `table` at `now_ns` (Unix ns), counting up to `cap`.
std::string DueDepthSql(const MessageTable& table, int64_t now_ns, int64_t cap);

// Its result. INTERNAL when it is not one row of two columns with an
// integer count.
absl::StatusOr<DueDepth> ParseDueDepth(const QueryResult& result, int64_t cap);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_DUE_DEPTH_STATEMENT_H_
