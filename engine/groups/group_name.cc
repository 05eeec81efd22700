#include "engine/groups/group_name.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace msgq {

std::string EchoForError(absl::string_view text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return absl::CHexEscape(text);
  return absl::StrCat(absl::CHexEscape(text.substr(0, kMax)), "... (",
                      text.size(), " bytes)");
}

absl::Status ValidateGroupName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("group name is empty");
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = absl::ascii_isalnum(static_cast<unsigned char>(c));
    if (alnum || (i > 0 && (c == '_' || c == '-'))) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "group name \"", EchoForError(name), "\" has '",
        absl::CHexEscape(name.substr(i, 1)), "' at position ", i + 1,
        "; a group name is letters, digits, '_' and '-', starting with a "
        "letter or a digit"));
  }
  if (name.size() > kMaxGroupNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("group name \"", EchoForError(name), "\" is ", name.size(),
                     " characters; at most ", kMaxGroupNameLength));
  }
  return absl::OkStatus();
}

}  // namespace msgq
