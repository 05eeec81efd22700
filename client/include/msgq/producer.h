// The producer side: enqueue messages with an INSERT on the application's
// own MariaDB Connector/C connection (MYSQL*), inside its transaction, so
// that a message exists if and only if the transaction that made it
// commits (no dual write). The behaviour every client shares is
// client/SPEC.md#producer; deduplication is docs/design/dedup.md.
//
// Example:
//   mysql_query(mysql, "BEGIN");
//   mysql_query(mysql, "INSERT INTO orders (id, total) VALUES (42, 990)");
//   msgq::ScopedTraceContext trace(current_traceparent);  // optional
//   absl::StatusOr<std::string> id = msgq::Enqueue(
//       mysql, "order_events",
//       {.body = R"({"order": 42})", .key = "customer-7",
//        .type = "order.placed", .headers = {{{"source", "web"}}},
//        .delay = absl::Seconds(10)});
//   if (!id.ok()) { mysql_query(mysql, "ROLLBACK"); return id.status(); }
//   mysql_query(mysql, "COMMIT");  // the order and its message, or neither
//
// The row one message makes (the same as the Go, Node and Python clients;
// plain SQL fills the same columns the same way):
//   - `id`: OutgoingMessage::id, or a new UUIDv7 in its 36-character text
//     form (for a char(36)/varchar(36) id; a table with an integer id must
//     give one, in decimal);
//   - `message`: the body as it is (JSON text for a json column, any bytes
//     for a blob); nullopt = NULL;
//   - `time_next`: 0 (send now), or MySQL's NOW(6) + the delay, in Unix ns;
//   - `message_key`, `message_type`, `headers` (a JSON object of strings,
//     keys sorted), `dedup_key`: only when given (the table needs them);
//   - `traceparent`, `tracestate`: CurrentTraceContext() when there is one,
//     each only when the table has the column (a table without them costs
//     one more statement: MySQL refuses the first with error 1054, which
//     leaves the transaction as it was);
//   - `columns`: as given, e.g. {{"priority", "10"}}.
// Columns not written take their defaults. The batch forms insert all
// messages with one multi-row INSERT; a column one message sets is DEFAULT
// in the rows of the others. No messages: no statement.
//
// Deduplicated enqueue (docs/tables.md#deduplicated-enqueue): EnqueueDedup
// writes INSERT ... ON DUPLICATE KEY UPDATE id = id, then reads who holds
// each key (SELECT ... LOCK IN SHARE MODE, which sees committed rows
// whatever the transaction's snapshot). A key a row already holds,
// committed or committed by a racing producer while this INSERT waited
// for its lock, is not inserted: the Enqueued names that row's id, with
// `duplicate` set. A duplicate is not an error and leaves the transaction
// as it was. Enqueue given a dedup_key writes it too, and a duplicate then
// fails with ALREADY_EXISTS (MySQL error 1062), as plain SQL does.
//
// Errors (the transaction is never committed or rolled back here; after a
// database error MySQL has undone that statement only, and the caller
// decides):
//   - INVALID_ARGUMENT, before any statement: a null connection; a table,
//     keyspace or column name that is not a plain name (letters, digits, _
//     and $, 1 to 64); a column of `columns` that is a field of
//     OutgoingMessage; a negative or infinite delay; headers that are not
//     UTF-8; a message of EnqueueDedup without a dedup_key.
//   - From the database, with "MySQL error N: text": ALREADY_EXISTS (1062,
//     a duplicate id or dedup key); FAILED_PRECONDITION (1054, a column the
//     table lacks, e.g. a key for a table without message_key); NOT_FOUND
//     (1146, no such table); PERMISSION_DENIED; INVALID_ARGUMENT (a value
//     the column refuses: too long, not an integer, NULL, invalid JSON);
//     ABORTED (deadlock or lock wait timeout: retry the transaction);
//     UNAVAILABLE (the connection broke: the transaction is lost);
//     INTERNAL otherwise.
//   - ALREADY_EXISTS from EnqueueDedup when a message's id is taken by a
//     row with another dedup key (nothing was inserted for it).
// On error no output is returned.
//
// Thread-safety: the functions are thread-safe; a MYSQL* is not, so one
// connection must not be used by two threads at once (Connector/C's rule).
// The trace context is per thread.
//
// This is the library msgq_producer (client/CMakeLists.txt), separate from
// msgq_client so that only its users link Connector/C.
#ifndef MSGQ_PRODUCER_H_
#define MSGQ_PRODUCER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "msgq/table_ref.h"

struct st_mysql;  // MYSQL of <mysql.h>

namespace msgq {

// The columns Enqueue writes besides id, message and time_next.
inline constexpr absl::string_view kKeyColumn = "message_key";
inline constexpr absl::string_view kTypeColumn = "message_type";
inline constexpr absl::string_view kHeadersColumn = "headers";
inline constexpr absl::string_view kDedupColumn = "dedup_key";
inline constexpr absl::string_view kTraceParentColumn = "traceparent";
inline constexpr absl::string_view kTraceStateColumn = "tracestate";

// One message to enqueue: a row of a message table (see the file comment
// for each field's column).
struct OutgoingMessage {
  std::optional<std::string> body;
  // nullopt = a new UUIDv7; an integer id in decimal ("17").
  std::optional<std::string> id;
  std::optional<std::string> key;
  std::optional<std::string> type;
  std::optional<std::map<std::string, std::string>> headers;
  // Send no earlier than this after now (MySQL's clock); zero = now.
  absl::Duration delay = absl::ZeroDuration();
  std::optional<std::string> dedup_key;
  // More columns by name, each value's text form (nullopt = NULL); not the
  // fields above, but traceparent and tracestate may be given here instead
  // of the current trace context.
  std::map<std::string, std::optional<std::string>> columns;
};

// What EnqueueDedup did with one message.
struct Enqueued {
  // The id of the row holding the message's dedup key: the message's own
  // when it was inserted.
  std::string id;
  // The row was there before: nothing was inserted for this message.
  bool duplicate = false;

  friend bool operator==(const Enqueued&, const Enqueued&) = default;
};

// Inserts `message` into `table` on `mysql` and returns its id in text
// form (what a subscriber's Message::id() shows).
absl::StatusOr<std::string> Enqueue(st_mysql* mysql, const TableRef& table,
                                    const OutgoingMessage& message);

// Inserts `messages` with one multi-row INSERT; returns their ids in order.
absl::StatusOr<std::vector<std::string>> EnqueueBatch(
    st_mysql* mysql, const TableRef& table,
    absl::Span<const OutgoingMessage> messages);

// Inserts `message` unless a row holds its dedup_key (required).
absl::StatusOr<Enqueued> EnqueueDedup(st_mysql* mysql, const TableRef& table,
                                      const OutgoingMessage& message);

// EnqueueDedup for several messages with one INSERT; two messages with one
// key: the second is a duplicate of the first.
absl::StatusOr<std::vector<Enqueued>> EnqueueDedupBatch(
    st_mysql* mysql, const TableRef& table,
    absl::Span<const OutgoingMessage> messages);

// A W3C Trace Context: `traceparent` ("00-<32 hex>-<16 hex>-<2 hex>") and
// `tracestate` (may be empty).
struct TraceContext {
  std::string traceparent;
  std::string tracestate;
};

// Makes `context` this thread's current trace context (what Enqueue
// writes) until it is destroyed; scopes nest. A traceparent that is not a
// valid W3C one (lowercase hex, version not ff, ids not all zero) is no
// context, as on the consumer side. With OpenTelemetry C++, wrap the
// producer's span: ScopedTraceContext trace({FormatTraceparent(span)}).
class ScopedTraceContext {
 public:
  explicit ScopedTraceContext(TraceContext context);
  ScopedTraceContext(absl::string_view traceparent,
                     absl::string_view tracestate = "")
      : ScopedTraceContext(
            TraceContext{std::string(traceparent), std::string(tracestate)}) {}
  ~ScopedTraceContext();

  ScopedTraceContext(const ScopedTraceContext&) = delete;
  ScopedTraceContext& operator=(const ScopedTraceContext&) = delete;

 private:
  std::optional<TraceContext> previous_;
};

// This thread's current trace context: the innermost ScopedTraceContext's,
// or nullopt.
std::optional<TraceContext> CurrentTraceContext();

// Whether `traceparent` is a valid W3C traceparent.
bool IsValidTraceparent(absl::string_view traceparent);

// A new UUID version 7 (RFC 9562) in its 36-character text form: 48 bits
// of Unix milliseconds, then random bits, so ids made later
// sort later (to the millisecond) and new rows go to the end of the
// primary key.
std::string NewUuidV7();

// The UUIDv7 of `now` and 10 bytes of `random` (version and variant bits
// overwritten); NewUuidV7's pure part, for tests.
std::string UuidV7(absl::Time now, absl::Span<const uint8_t> random);

}  // namespace msgq

#endif  // MSGQ_PRODUCER_H_
