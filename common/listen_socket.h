// Listening TCP sockets and client addresses of msgqd's own servers (the
// HTTP port, the gRPC front).
//
// Thread-safe (no shared state).
#ifndef MSGQ_COMMON_LISTEN_SOCKET_H_
#define MSGQ_COMMON_LISTEN_SOCKET_H_

#include <sys/socket.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq {

// A socket listening on `listen` ("HOST:PORT"; SO_REUSEADDR, close on
// exec, blocking), or why not: INVALID_ARGUMENT "PROTOCOL listen address
// 'LISTEN': why" when it does not parse, INVALID_ARGUMENT when it does not
// resolve, UNAVAILABLE "cannot serve PROTOCOL on LISTEN: why" when no
// address can be bound. `protocol` names the port in messages ("HTTP").
absl::StatusOr<int> ListenTcp(const std::string& listen,
                              absl::string_view protocol);

// The port `fd` is bound to; 0 when unknown.
int LocalPort(int fd);

// The client's "IP:PORT" (`peer`) and its per-address key (`address`): the
// IPv4 address (also of an IPv4-mapped IPv6 one), or the /64 of an IPv6
// address (one host commonly has a whole /64); "?" for both when unknown.
void DescribePeer(const sockaddr* addr, std::string* peer,
                  std::string* address);

}  // namespace msgq

#endif  // MSGQ_COMMON_LISTEN_SOCKET_H_
