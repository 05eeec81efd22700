// PeekStatement: the SQL of the console's message views: "recent messages",
// a bounded read of one message table's bookkeeping columns, and one
// message read by its id.
//
// The statement reads id, priority, epoch, time_next and time_acked (and
// time_created, time_dead, last_error when the table has them), at most
// kMaxPeekLimit rows, in one of two orders that an index answers without
// sorting the table:
//   kNewest   highest id first (the primary key, read backwards);
//   kNextDue  unacked rows in the poll's order (priority, time_next, id),
//             which the schema's poller_idx covers.
// The payload (the other streamed columns) is read only when asked, each
// column cut to kPeekPayloadBytes with LEFT(). With a state (ready,
// scheduled, in flight, dead: engine/queue/message_counts.h; or acked, kept
// until purged) only rows in that state at `now_ns` are read; with `now_ns` set
// each row also gets its state as `msgq_state` ('acked', 'dead', 'ready',
// 'scheduled' or 'in_flight'). Identifiers are quoted with QuoteIdentifier
// (names from information_schema); the statement holds no literal but the limit
// and `now_ns`.
//
// MessageSql reads one row by its id (a literal from sql_literal.h) with
// its state at `now_ns` and every other column of the table (payload,
// headers, trace context), each cut to kMessageValueChars characters
// (bytes for binary columns) with LEFT() and followed by whether it was cut.
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_SQL_PEEK_STATEMENT_H_
#define MSGQ_ENGINE_SQL_PEEK_STATEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/message_table.h"

namespace msgq {

inline constexpr int kMaxPeekLimit = 100;
inline constexpr int kPeekPayloadBytes = 256;

inline constexpr int kMessageValueChars = 4096;

enum class PeekOrder { kNewest, kNextDue };
enum class PeekState { kAny, kReady, kScheduled, kInFlight, kDead, kAcked };

struct PeekRequest {
  PeekOrder order = PeekOrder::kNewest;
  int limit = 50;  // 1..kMaxPeekLimit
  bool payload = false;
  PeekState state = PeekState::kAny;
  // Now on MySQL's clock (Unix ns): needed by a state; 0 reads no state.
  int64_t now_ns = 0;
};

// "newest" or "next" (the API's spelling); INVALID_ARGUMENT otherwise.
absl::StatusOr<PeekOrder> ParsePeekOrder(absl::string_view order);
// "" (any), "ready", "scheduled", "in_flight", "dead" or "acked";
// INVALID_ARGUMENT otherwise.
absl::StatusOr<PeekState> ParsePeekState(absl::string_view state);

// The SELECT for `request` on `table`. INVALID_ARGUMENT when the limit is
// outside 1..kMaxPeekLimit, a state is asked without now_ns, or acked rows
// in the order of the unacked (kNextDue).
absl::StatusOr<std::string> PeekSql(const MessageTable& table,
                                    const PeekRequest& request);

// One message's read: `sql`'s row holds the columns `fixed` (id, priority,
// epoch, time_next, time_acked, the optional columns the table has, then
// msgq_state), then for each of `values` its value cut to
// kMessageValueChars and 1 when it was cut (0 otherwise, NULL for NULL).
struct MessageRead {
  std::string sql;
  std::vector<std::string> fixed;
  std::vector<std::string> values;
};

// The console's dead-letter actions on a selection of ids: DeadStateSql
// reads each id's state at `now_ns` (columns id, msgq_state; ids without a
// row are absent), DeadDeleteSql deletes those that are dead. Each id in
// any form CanonicalId takes; INVALID_ARGUMENT for one that is not an id of
// the table, or for no id.
absl::StatusOr<std::string> DeadStateSql(const MessageTable& table,
                                         const std::vector<std::string>& ids,
                                         int64_t now_ns);
absl::StatusOr<std::string> DeadDeleteSql(const MessageTable& table,
                                          const std::vector<std::string>& ids);

// The read of the message `id` (in any form CanonicalId takes: "007" is 7)
// at `now_ns`. INVALID_ARGUMENT when `id` is not a valid id of the table's
// id column (message_table.h).
absl::StatusOr<MessageRead> MessageSql(const MessageTable& table,
                                       absl::string_view id, int64_t now_ns);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_PEEK_STATEMENT_H_
