// PeekStatement: the SQL of the console's "recent messages" view, a bounded
// read of one message table's bookkeeping columns.
//
// The statement reads id, priority, epoch, time_next and time_acked (and
// time_created, time_dead, last_error when the table has them), at most
// kMaxPeekLimit rows, in one of two orders that an index answers without
// sorting the table:
//   kNewest   highest id first (the primary key, read backwards);
//   kNextDue  unacked rows in the poll's order (priority, time_next, id),
//             which the schema's poller_idx covers.
// The payload (the other streamed columns) is read only when asked, each
// column cut to kPeekPayloadBytes with LEFT(). Identifiers are quoted with
// QuoteIdentifier (names from information_schema); the statement holds no
// literal but the limit.
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_SQL_PEEK_STATEMENT_H_
#define MSGQ_ENGINE_SQL_PEEK_STATEMENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/message_table.h"

namespace msgq {

inline constexpr int kMaxPeekLimit = 100;
inline constexpr int kPeekPayloadBytes = 256;

enum class PeekOrder { kNewest, kNextDue };

struct PeekRequest {
  PeekOrder order = PeekOrder::kNewest;
  int limit = 50;  // 1..kMaxPeekLimit
  bool payload = false;
};

// "newest" or "next" (the API's spelling); INVALID_ARGUMENT otherwise.
absl::StatusOr<PeekOrder> ParsePeekOrder(absl::string_view order);

// The SELECT for `request` on `table`. INVALID_ARGUMENT when the limit is
// outside 1..kMaxPeekLimit.
absl::StatusOr<std::string> PeekSql(const MessageTable& table,
                                    const PeekRequest& request);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_PEEK_STATEMENT_H_
