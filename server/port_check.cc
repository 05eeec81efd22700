#include "server/port_check.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/host_port.h"

namespace msgq {

absl::Status CheckPortFree(const std::string& listen, absl::string_view flag) {
  absl::StatusOr<HostPort> hp = ParseHostPort(listen);
  if (!hp.ok() || !hp->port.has_value() || *hp->port == 0) {
    return absl::OkStatus();
  }
  const std::string port = absl::StrCat(*hp->port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(hp->host.empty() ? nullptr : hp->host.c_str(), port.c_str(),
                  &hints, &found) != 0) {
    return absl::OkStatus();
  }
  bool in_use = false;
  for (addrinfo* a = found; a != nullptr && !in_use; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE) {
      in_use = true;
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (!in_use) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "port ", port, " (flag ", flag, ") is in use (", listen,
      "): stop what listens there or give ", flag, " another port"));
}

absl::Status ExplainListenFailure(const std::string& listen,
                                  absl::string_view flag,
                                  const absl::Status& failure) {
  absl::Status in_use = CheckPortFree(listen, flag);
  return in_use.ok() ? failure : in_use;
}

}  // namespace msgq
