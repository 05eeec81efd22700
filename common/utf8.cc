#include "common/utf8.h"

#include <utf8proc.h>

#include <algorithm>

namespace msgq {

size_t Utf8SequenceLength(absl::string_view s) {
  if (s.empty()) return 0;
  utf8proc_int32_t codepoint = 0;
  // utf8proc rejects overlong forms, surrogates, code points above
  // U+10FFFF and truncated sequences with a negative result.
  const utf8proc_ssize_t n = utf8proc_iterate(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
      static_cast<utf8proc_ssize_t>(std::min<size_t>(s.size(), 4)), &codepoint);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

bool IsValidUtf8(absl::string_view s) {
  while (!s.empty()) {
    const size_t n = Utf8SequenceLength(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

}  // namespace msgq
