// UTF-8 checks shared by the engine (ids, table names, failure reasons) and
// the CLI (what it prints as text), on utf8proc's decoder.
//
// Well-formed means what a utf8mb4 column may hold: no overlong forms, no
// surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated
// sequence. Noncharacters (U+FFFE, ...) are well-formed.
//
// Thread-safety: pure functions.
#ifndef MSGQ_COMMON_UTF8_H_
#define MSGQ_COMMON_UTF8_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace msgq {

// Bytes of the well-formed UTF-8 sequence at the start of `s` (1 to 4);
// 0 when `s` is empty or does not start with one.
size_t Utf8SequenceLength(absl::string_view s);

// True when all of `s` is well-formed UTF-8 (the empty string is).
bool IsValidUtf8(absl::string_view s);

}  // namespace msgq

#endif  // MSGQ_COMMON_UTF8_H_
