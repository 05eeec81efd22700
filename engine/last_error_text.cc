#include "engine/last_error_text.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "common/utf8.h"

namespace msgq {
namespace {

constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

Repertoire RepertoireOf(absl::string_view charset) {
  const std::string cs = absl::AsciiStrToLower(charset);
  if (cs == "utf8mb4" || cs == "utf16" || cs == "utf16le" || cs == "utf32") {
    return Repertoire::kUnicode;
  }
  if (cs == "utf8mb3" || cs == "utf8" || cs == "ucs2") return Repertoire::kBmp;
  return Repertoire::kAscii;
}

std::string LastErrorText(absl::string_view reason, int max_chars,
                          Repertoire repertoire) {
  std::string out;
  out.reserve(std::min(reason.size(), static_cast<size_t>(max_chars) * 4));
  int chars = 0;
  while (!reason.empty() && chars < max_chars) {
    const size_t len = Utf8SequenceLength(reason);
    if (repertoire == Repertoire::kAscii && len != 1) {
      out.push_back('?');
    } else if (len == 0 || (repertoire == Repertoire::kBmp && len == 4)) {
      out.append(kReplacement.data(), kReplacement.size());
    } else {
      out.append(reason.data(), len);
    }
    reason.remove_prefix(len == 0 ? 1 : len);
    ++chars;
  }
  return out;
}

}  // namespace msgq
