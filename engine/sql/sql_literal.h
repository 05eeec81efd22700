// SQL literals for message ids: the one place an id becomes SQL text.
//
// AppendIdLiteral validates an id for the id column's IdKind at the moment it
// is written, whatever its source (a client's ack, a poll, the binlog), and
// appends exactly one SQL literal that denotes it:
//   kSignedInteger    canonical decimal in int64 range: "-7", "0"
//                     (never "07", "+7", "-0", " 7", "1e3")
//   kUnsignedInteger  canonical decimal in uint64 range
//   kBinary           X'<hex>' (any bytes, also none)
//   kText             _utf8mb4 X'<hex>' (valid UTF-8 only)
// Hex literals hold no quote and no backslash, so what they mean does not
// depend on sql_mode (NO_BACKSLASH_ESCAPES, ANSI_QUOTES) or on a character
// set's escaping rules. The _utf8mb4 introducer makes a text id a string in
// the connection's character set (MysqlConnection sets utf8mb4) with the
// coercibility of a literal, so a comparison with the id column uses the
// column's collation, and `id IN (...)` still uses the primary key
// (checked with EXPLAIN in tests/sql_hardening_test.cc).
//
// Example:
//   std::string sql = "... WHERE `id` IN (";
//   RETURN_IF_ERROR(AppendIdLiteral(table.id_kind, id, &sql));
//
// NowOperand is the other value reads compare with: MySQL's clock, as the
// statement reads it.
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_SQL_SQL_LITERAL_H_
#define MSGQ_ENGINE_SQL_SQL_LITERAL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/message_table.h"

namespace msgq {

// Appends the literal of `id` to `*out`. INVALID_ARGUMENT, naming the kind
// and the id (C-escaped, at most 64 bytes of it), when `id` is not a valid id
// of `kind`; `*out` is then unchanged.
absl::Status AppendIdLiteral(IdKind kind, absl::string_view id,
                             std::string* out);

// The literal of `id` alone; errors as AppendIdLiteral.
absl::StatusOr<std::string> IdLiteral(IdKind kind, absl::string_view id);

// MySQL's clock as Unix ns when the statement runs (NOW(6) is fixed for one
// statement): what a read compares time_next with, so that "due" is
// MySQL's own judgement, never msgqd's estimate of its clock
// (docs/design/due-clock.md).
inline constexpr char kMysqlNowNs[] =
    "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)";

// The operand a statement compares time_next with: kMysqlNowNs for nullopt,
// else the fixed Unix ns value (statement tests, EXPLAIN).
std::string NowOperand(std::optional<int64_t> now_ns);

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_SQL_LITERAL_H_
