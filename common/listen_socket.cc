#include "common/listen_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/host_port.h"

namespace msgq {

absl::StatusOr<int> ListenTcp(const std::string& listen,
                              absl::string_view protocol) {
  absl::StatusOr<HostPort> hp = ParseHostPort(listen);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        protocol, " listen address '", listen, "': ", hp.status().message()));
  }
  const std::string port = absl::StrCat(*hp->port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(hp->host.empty() ? nullptr : hp->host.c_str(),
                             port.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot serve ", protocol, " on ", listen, ": ", gai_strerror(rc)));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      break;
    }
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve ", protocol, " on ", listen, ": ", error));
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return 0;
}

void DescribePeer(const sockaddr* addr, std::string* peer,
                  std::string* address) {
  *address = ClientAddressKey(addr);
  char text[INET6_ADDRSTRLEN] = "?";
  *peer = "?";
  if (addr != nullptr && addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    *peer = absl::StrCat(text, ":", ntohs(v4->sin_port));
  } else if (addr != nullptr && addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof(text));
      *peer = absl::StrCat(text, ":", ntohs(v6->sin6_port));
    } else {
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
      *peer = absl::StrCat("[", text, "]:", ntohs(v6->sin6_port));
    }
  }
}

}  // namespace msgq
