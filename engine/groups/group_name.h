// ValidateGroupName: whether a consumer group's name may be stored
// (docs/design/consumer-groups.md).
//
// A group name is 1 to 64 characters, each an ASCII letter, a digit, '_' or
// '-', and starts with a letter or a digit: it must fit the msgq_groups
// column (VARCHAR(64)), read well in `msgq groups list` and follow `group`
// on the MySQL port without quotes. Names are compared byte for byte
// ("Billing" and "billing" are two groups).
//
// Example:
//   ValidateGroupName("billing");   // OK
//   ValidateGroupName("bil ling");  // INVALID_ARGUMENT naming ' ' and where
//
// Returns OK or INVALID_ARGUMENT with one of:
//   group name is empty
//   group name "NAME..." is N characters; at most 64
//   group name "NAME" has ' ' at position P; a group name is letters,
//     digits, '_' and '-', starting with a letter or a digit
// (the name escaped and cut to 64 bytes; P counts bytes from 1).
//
// Thread-safe (a pure function).
#ifndef MSGQ_ENGINE_GROUPS_GROUP_NAME_H_
#define MSGQ_ENGINE_GROUPS_GROUP_NAME_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace msgq {

inline constexpr size_t kMaxGroupNameLength = 64;

absl::Status ValidateGroupName(absl::string_view name);

// `text` as it may appear in an error: C-escaped, and cut to 64 bytes with
// "... (N bytes)" after a longer one.
std::string EchoForError(absl::string_view text);

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_GROUP_NAME_H_
