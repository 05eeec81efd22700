// GlobMatch: shell-style wildcard matching for the authorization policy.
//
// `*` matches any run of characters (including none), `?` exactly one; every
// other character matches itself (case-sensitive, as MySQL names on Linux).
// Runs in O(|pattern| * |text|) at worst: no exponential backtracking, so a
// hostile policy line cannot stall a request.
//
// Thread-safe (pure function).
#ifndef MSGQ_SERVER_AUTH_GLOB_H_
#define MSGQ_SERVER_AUTH_GLOB_H_

#include "absl/strings/string_view.h"

namespace msgq::auth {

bool GlobMatch(absl::string_view pattern, absl::string_view text);

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_GLOB_H_
