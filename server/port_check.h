// PortInUse: tells whether a listen address's port is taken, so msgqd can
// refuse to start with a message that names the port and its flag rather
// than a server library's own error text.
//
// Example:
//   if (absl::Status s = CheckPortFree("127.0.0.1:15999", "--listen");
//       !s.ok()) {
//     return s;  // UNAVAILABLE "port 15999 (flag --listen) is in use ..."
//   }
//
// CheckPortFree binds (SO_REUSEADDR, no listen) and closes a socket on each
// address `listen` resolves to, as msgqd's servers bind theirs: a port that
// another socket listens on (or holds bound) fails with EADDRINUSE. Returns
// OK when every address could be bound, for port 0 (a free port is picked),
// and when `listen` cannot be read or resolved or the bind fails for
// another reason (the server's own start reports those). UNAVAILABLE
// "port N (flag FLAG) is in use (LISTEN): stop what listens there or give
// FLAG another port" otherwise. A port freed or taken between this check
// and the server's own bind is the server's to report.
//
// Thread-safe (no shared state).
#ifndef MSGQ_SERVER_PORT_CHECK_H_
#define MSGQ_SERVER_PORT_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace msgq {

absl::Status CheckPortFree(const std::string& listen, absl::string_view flag);

// `failure` (a server's failed start on `listen`) as CheckPortFree's
// "port N (flag FLAG) is in use" when the port is taken now, else as is.
absl::Status ExplainListenFailure(const std::string& listen,
                                  absl::string_view flag,
                                  const absl::Status& failure);

}  // namespace msgq

#endif  // MSGQ_SERVER_PORT_CHECK_H_
