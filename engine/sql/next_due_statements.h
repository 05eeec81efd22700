// NextDueStatements: the earliest time_next after now among a table's
// unacked rows, read as a skip scan of poller_idx (time_acked, priority,
// time_next) that costs a few index dives per distinct priority, whatever
// the table's size and whatever its index statistics say.
//
// Why not one statement: `SELECT priority, MIN(time_next) ... WHERE
// time_acked IS NULL AND time_next > now GROUP BY time_acked, priority`
// gets MariaDB's loose index scan only while the statistics of poller_idx
// are fresh; with stale ones (a table just filled, or churned since the
// last recalculation) MariaDB 10.11 reads every unacked index entry
// instead (98,000 per call in a 100,000-message drain). A MIN() whose
// other key parts are constants is answered from the index by rule, with
// one dive ("Select tables optimized away"): the first statement finds the
// smallest priority, each step the earliest time_next of one priority and
// the next priority.
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_SQL_NEXT_DUE_STATEMENTS_H_
#define MSGQ_ENGINE_SQL_NEXT_DUE_STATEMENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace msgq {

// Priorities probed one by one at most; a table with more unacked
// priorities than that is answered by NextDueGroupedSql.
inline constexpr int kNextDueMaxPriorities = 32;

// One row, one column: the smallest priority of an unacked row (NULL when
// there is none). `table` is quoted (`db`.`t`).
std::string NextDueFirstSql(absl::string_view table);

// `now_ns` below is the value time_next is compared with: nullopt for
// MySQL's clock when the statement runs (NowOperand, sql_literal.h), what
// msgqd sends; a fixed value for tests and EXPLAIN.
//
// One row: the earliest time_next > now_ns of `priority`'s unacked rows
// (NULL when none), and the next larger priority of an unacked row (NULL
// when none).
std::string NextDueStepSql(absl::string_view table, int64_t priority,
                           std::optional<int64_t> now_ns);

// One row per priority: its earliest time_next > now_ns (the one-statement
// form above, for tables with many priorities).
std::string NextDueGroupedSql(absl::string_view table,
                              std::optional<int64_t> now_ns);

// msgq_concurrency_by: the rows of a non-NULL `key` (backtick-quoted) in
// flight at now_ns (unacked, sent, due again only later): key, id, epoch,
// time_next. With the table's unacked `priorities` (at most
// kNextDueMaxPriorities) the read is one range of poller_idx per priority
// over the rows due later only; empty `priorities`: every unacked entry.
std::string InFlightSql(absl::string_view table, absl::string_view key,
                        const std::vector<int64_t>& priorities,
                        std::optional<int64_t> now_ns);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_NEXT_DUE_STATEMENTS_H_
