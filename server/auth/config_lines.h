// The line format the token file and the policy file share: `#` starts a
// comment, fields are separated by runs of whitespace, blank lines are
// skipped; errors name `file:line`.
//
// Thread-safe (pure functions).
#ifndef MSGQ_SERVER_AUTH_CONFIG_LINES_H_
#define MSGQ_SERVER_AUTH_CONFIG_LINES_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace msgq::auth {

// The fields of `line` without its comment; empty for a blank line.
inline std::vector<absl::string_view> ConfigFields(absl::string_view line) {
  if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
    line = line.substr(0, hash);
  }
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r\f\v"), absl::SkipEmpty());
}

// INVALID_ARGUMENT "file:line: what".
inline absl::Status LineError(absl::string_view file, int line,
                              absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ":", line, ": ", what));
}

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_CONFIG_LINES_H_
