// Text and JSON renderings used by the msgq tool: the table listing of
// `msgq tables`, the per-message lines of `msgq tail` and the dead messages
// of `msgq dead`.
//
// Values are the text-protocol bytes MySQL sends. JSON output is always valid
// JSON: numeric columns whose text is a JSON number become numbers, NULL
// becomes null, everything else a string in which bytes that are not valid
// UTF-8 are written as \u00XX (one per byte, i.e. read as Latin-1).
//
// Example:
//   std::cout << FormatTablesText(tables);
//   std::cout << FormatMessageJson(msg) << "\n";  // {"id":1,"message":"hi"}
//   std::cout << FormatMessageText(msg) << "\n";  // id=1 message=hi
//
// Thread-safe (pure functions).
#ifndef MSGQ_CLIENT_CLI_FORMAT_H_
#define MSGQ_CLIENT_CLI_FORMAT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "msgq/message.h"
#include "msgq/v1/messaging.pb.h"

namespace msgq {

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(absl::string_view text);

// One line per table under a header, columns aligned:
//   KEYSPACE NAME STATUS DISCOVERY SUBSCRIBERS CACHED IN_FLIGHT DETAILS
// STATUS is "loaded" or "error"; DETAILS holds the settings of a loaded table
// ("ack_wait=30s purge_after=86400s batch_size=10 ...") or the load error.
// Ends with a newline.
std::string FormatTablesText(const std::vector<v1::TableStatus>& tables);

// {"tables":[...]} with the proto's field names, every field present.
std::string FormatTablesJson(const std::vector<v1::TableStatus>& tables);

// The settings of a loaded table in the DETAILS form above.
std::string FormatSettings(const v1::TableSettings& settings);

// One JSON object with a member per column, in column order. No newline.
std::string FormatMessageJson(const Message& message);

// "name=value" per column, space separated. A value is written bare when it
// is non-empty, made only of letters, digits and ._:/@+- and is not "NULL";
// otherwise as a JSON string. A NULL is written as NULL. No newline.
std::string FormatMessageText(const Message& message);

// FormatMessageText() followed by " epoch=N" when N, the sends of the
// message before this delivery, is not 0: what `msgq tail` prints. With the
// id it names the delivery for `msgq nack`/`msgq extend` (ID:EPOCH, EPOCH 0
// when none is printed). A first delivery thus prints as it did before
// epochs were shown (scripts and README.md#quickstart rely on
// that).
// No newline.
std::string FormatMessageTextWithEpoch(const Message& message);

// One line per dead message under a header, columns aligned:
//   ID EPOCH DIED LAST_ERROR
// DIED is how long before `now` it died, to the second ("2m5s ago"), or "-"
// when the table has no time_dead column; LAST_ERROR is "-" when empty. An
// id that is not a bare word (see FormatMessageText), or an error with
// control characters or invalid UTF-8, is written as a JSON string. Ends
// with a newline.
std::string FormatDeadText(const std::vector<v1::DeadMessage>& messages,
                           absl::Time now);

// {"messages":[{"id":"7","epoch":5,"last_error":"...","time_dead":NS,
// "time_created":NS},...]}: the proto's field names, every field present,
// the id as a JSON string of its text form (not base64 as proto JSON would
// write bytes), times in Unix nanoseconds (0 = unknown).
std::string FormatDeadJson(const std::vector<v1::DeadMessage>& messages);

// One line per consumer group under a header, columns aligned:
//   KEYSPACE TABLE GROUP FLOOR CREATED FILTER
// FLOOR is the group's GTID floor, or "earliest" when empty; CREATED is
// UTC to the second ("2026-12-07T16:10:05Z"); FILTER is "-" when none.
// Ends with a newline.
std::string FormatGroupsText(const std::vector<v1::Group>& groups);

// {"groups":[{"keyspace":"app","table":"orders","name":"billing",
// "floor_gtid":"0-1-42","filter":"","created_at_ns":NS,"paused":false},...]}
std::string FormatGroupsJson(const std::vector<v1::Group>& groups);

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLI_FORMAT_H_
