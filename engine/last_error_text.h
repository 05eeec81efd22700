// What a message table's `last_error` column holds for a failure reason.
//
// Reasons are arbitrary bytes from clients. LastErrorText makes of one the
// text the column can store whatever its character set: each byte that does
// not start a well-formed UTF-8 sequence becomes U+FFFD, each character the
// column's repertoire cannot hold becomes U+FFFD (utf8mb3) or '?' (latin1
// and other single-byte sets), and the text is cut to the column's size in
// characters. A strict sql_mode would otherwise refuse the whole statement
// (error 1366). The SQL store writes this text; the in-memory test store
// keeps the same text, so both answer alike.
//
// Example:
//   std::string stored = LastErrorText(reason, table.last_error_chars,
//                                      RepertoireOf("latin1"));
//
// Pure functions; thread-safe.
#ifndef MSGQ_ENGINE_LAST_ERROR_TEXT_H_
#define MSGQ_ENGINE_LAST_ERROR_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace msgq {

// The characters a last_error column can hold, from its character set.
enum class Repertoire {
  kUnicode,  // utf8mb4, utf16, utf16le, utf32: every character
  kBmp,      // utf8mb3 (utf8), ucs2: up to U+FFFF
  kAscii,    // any other (latin1, ascii, ...): ASCII is safe, more may not be
};

// The repertoire of the character set named `charset` (any case).
Repertoire RepertoireOf(absl::string_view charset);

// `reason` as last_error stores it: each byte that does not start a
// well-formed UTF-8 sequence replaced by U+FFFD, each character outside
// `repertoire` by U+FFFD (kBmp) or '?' (kAscii), then cut to at most
// `max_chars` characters (code points).
std::string LastErrorText(absl::string_view reason, int max_chars,
                          Repertoire repertoire = Repertoire::kUnicode);

}  // namespace msgq

#endif  // MSGQ_ENGINE_LAST_ERROR_TEXT_H_
