// Policy: who may do what on which message tables (--auth_policy_file).
//
// The file is text, one grant per line; '#' starts a comment, blank lines
// are ignored:
//
//   # principal   keyspace/table   actions
//   billing       shop/invoices    stream,ack,nack
//   ops           */*              admin
//   *             shop/public_*    stream
//
// The principal is a token file's principal or a client certificate's
// identity (authorizer.h); the principal and both halves of the target are
// globs (`*` any run, `?` one character, glob.h), so `*` in the first field
// is every authenticated caller. Actions, comma-separated:
//   stream  MessageStream;
//   ack     MessageAck;
//   nack    MessageNack and MessageExtend;
//   admin   SetPaused, Redrive, ListDead, CreateGroup, ListGroups,
//           DeleteGroup and the console's pages and actions (dead
//           messages, message peek, redrive);
//   *       all of them.
// Grants only add: a call is allowed when any line grants its action on its
// table to its principal; nothing else is.
//
// Thread-safety: a parsed Policy is immutable and safe to share.
#ifndef MSGQ_SERVER_AUTH_POLICY_H_
#define MSGQ_SERVER_AUTH_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq::auth {

enum class Action : uint8_t {
  kStream = 1,
  kAck = 2,
  kNack = 4,
  kAdmin = 8,
};

// "stream", "ack", "nack" or "admin".
absl::string_view ActionName(Action action);

class Policy {
 public:
  struct Grant {
    std::string principal;  // glob
    std::string keyspace;   // glob
    std::string table;      // glob
    uint8_t actions = 0;    // bit set of Action
    int line = 0;
  };

  // Parses a policy file's text; `file` names it in errors. Errors are
  // INVALID_ARGUMENT "FILE:LINE: what is wrong" for the first bad line: a
  // line without exactly three fields, a target without one '/' between a
  // non-empty keyspace and table, an empty or unknown action.
  static absl::StatusOr<Policy> Parse(absl::string_view text,
                                      absl::string_view file);

  // Whether some grant gives `action` on keyspace.table to `principal`.
  bool Allows(absl::string_view principal, absl::string_view keyspace,
              absl::string_view table, Action action) const;
  // Whether some grant gives `principal` any action on keyspace.table (what
  // ListTables and the console's table list show).
  bool AllowsAny(absl::string_view principal, absl::string_view keyspace,
                 absl::string_view table) const;

  const std::vector<Grant>& grants() const { return grants_; }

 private:
  uint8_t ActionsOf(absl::string_view principal, absl::string_view keyspace,
                    absl::string_view table) const;
  std::vector<Grant> grants_;
};

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_POLICY_H_
