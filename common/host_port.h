// ParseHostPort: the one reading of "HOST:PORT" for msgqd's listen flags
// and MySQL endpoints: "host:port", "[ipv6]:port", ":port" (empty host),
// and, where the port may be left out, "host" and "[ipv6]". An IPv6
// address with its port must be in brackets ("::1:3306" is refused: which
// colon ends the address?).
//
// Errors are INVALID_ARGUMENT with a short reason only (callers prefix
// the flag and the text): "want HOST:PORT", "no closing ']'", "text after
// ']'", "put an IPv6 address in brackets", "empty port", "the port is not
// a number in MIN..65535".
//
// IsLoopbackHost: whether a host (as ParseHostPort returns it, without
// brackets) is loopback: an IPv4 address in 127/8, the IPv6 address ::1 in
// any spelling, or "localhost". Names are not resolved.
//
// ClientAddressKey: the key under which msgqd's ports count a client's
// connections: the IPv4 address (also of an IPv4-mapped IPv6 one), or the
// /64 of an IPv6 address ("2001:db8:1:2::/64": one host commonly has a
// whole /64 and could otherwise take a new address per connection); "?"
// for a null address or another family.
//
// Thread-safe (pure functions).
#ifndef MSGQ_COMMON_HOST_PORT_H_
#define MSGQ_COMMON_HOST_PORT_H_

#include <sys/socket.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq {

struct HostPort {
  std::string host;         // without the brackets of an IPv6 address
  std::optional<int> port;  // absent only where the port may be left out
};

struct HostPortRules {
  bool port_required = true;
  int min_port = 0;  // 0: a listen address may ask for any free port
};

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text,
                                       HostPortRules rules = {});

bool IsLoopbackHost(absl::string_view host);

std::string ClientAddressKey(const sockaddr* addr);

}  // namespace msgq

#endif  // MSGQ_COMMON_HOST_PORT_H_
