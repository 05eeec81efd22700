#include "server/mysql_protocol/transport.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace msgq::mysql_protocol {

absl::Status PlainTransport::Write(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("send: ", strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status PlainTransport::Read(std::string& out, absl::Time, size_t max) {
  char buf[16384];
  max = std::min(max, sizeof(buf));
  while (true) {
    const ssize_t n = recv(fd_, buf, max, 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      return absl::OkStatus();
    }
    if (n < 0 && errno == EINTR) continue;
    return absl::UnavailableError(n == 0 ? "client closed the connection"
                                         : strerror(errno));
  }
}

absl::Status TlsTransport::Write(absl::string_view bytes) {
  absl::Status s = connection_->WriteAll(bytes, absl::InfiniteFuture());
  if (s.ok()) return s;
  return absl::UnavailableError(s.message());
}

absl::Status TlsTransport::Read(std::string& out, absl::Time deadline,
                                size_t max) {
  char buf[16384];
  absl::StatusOr<size_t> n =
      connection_->Read(buf, std::min(max, sizeof(buf)), deadline);
  if (!n.ok()) {
    if (n.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return n.status();
    }
    return absl::UnavailableError(n.status().message());
  }
  if (*n == 0) return absl::UnavailableError("client closed the connection");
  out.append(buf, *n);
  return absl::OkStatus();
}

bool IsLoopbackPeer(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
    return false;
  }
  if (peer.ss_family == AF_INET) {
    const uint32_t ip =
        ntohl(reinterpret_cast<sockaddr_in*>(&peer)->sin_addr.s_addr);
    return (ip >> 24) == 127;
  }
  if (peer.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace msgq::mysql_protocol
