#include "server/http/tls_terminator.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/tls/tls_connection.h"

namespace msgq {
namespace {

// The longest request line the terminator buffers to insert its header.
constexpr size_t kMaxRequestLine = 16 << 10;

absl::StatusOr<int> Listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTPS on ", listen, ": no port"));
  }
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int e = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                port.c_str(), &hints, &found);
      e != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTPS on ", listen, ": ", gai_strerror(e)));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTPS on ", listen, ": ", error));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

// "ADDRESS:PORT" of an accepted client.
std::string PeerName(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
    return absl::StrCat("[", host, "]:", port);
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
  inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
  port = ntohs(a->sin_port);
  return absl::StrCat(host, ":", port);
}

int ConnectBackend(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Writes all of `data` to the backend (blocking socket, loopback).
bool SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsTerminator>> TlsTerminator::Start(
    const std::string& listen, int backend_port, std::string secret,
    tls::TlsServerContext* context, Options options) {
  absl::StatusOr<int> fd = Listen(listen);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<TlsTerminator> t(
      new TlsTerminator(backend_port, std::move(secret), context, options));
  t->listen_fd_ = *fd;
  t->port_ = BoundPort(*fd);
  if (pipe2(t->stop_fds_, O_CLOEXEC) != 0) {
    return absl::InternalError("cannot make a pipe");
  }
  t->acceptor_ = std::thread([p = t.get()] { p->AcceptLoop(); });
  return t;
}

TlsTerminator::~TlsTerminator() {
  if (stop_fds_[1] >= 0) {
    // The pipe stays readable: every poll() on it returns from now on.
    (void)!write(stop_fds_[1], "x", 1);
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::list<Connection> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(connections_);
  }
  for (Connection& c : all) shutdown(c.wake_fd, SHUT_RDWR);
  for (Connection& c : all) {
    c.thread.join();
    close(c.wake_fd);
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  for (int fd : stop_fds_) {
    if (fd >= 0) close(fd);
  }
}

void TlsTerminator::Reap() {
  std::list<Connection> finished;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if (it->done) finished.splice(finished.end(), connections_, it);
      it = next;
    }
  }
  for (Connection& c : finished) {
    c.thread.join();
    close(c.wake_fd);
  }
}

void TlsTerminator::AcceptLoop() {
  while (true) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fds_[0], POLLIN, 0}};
    // Wakes now and then to join finished connections.
    const int r = poll(p, 2, 1000);
    if (p[1].revents != 0) return;
    Reap();
    if (r <= 0 || (p[0].revents & POLLIN) == 0) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer),
                           &peer_len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    absl::MutexLock lock(&mu_);
    if (connections_.size() >= static_cast<size_t>(options_.max_connections)) {
      close(fd);  // full: the client may retry
      continue;
    }
    const int wake_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (wake_fd < 0) {
      close(fd);
      continue;
    }
    connections_.emplace_back();
    Connection* c = &connections_.back();
    c->wake_fd = wake_fd;
    c->thread = std::thread(
        [this, fd, c, name = PeerName(peer)] { Serve(fd, name, c); });
  }
}

void TlsTerminator::Serve(int fd, std::string peer, Connection* self) {
  auto finish = [&] {
    absl::MutexLock lock(&mu_);
    self->done = true;
  };
  // The handshake polls the client fd only: a stopping terminator wakes
  // it with shutdown() on the connection's wake_fd.
  absl::StatusOr<std::unique_ptr<tls::TlsConnection>> conn =
      tls::TlsConnection::Accept(fd, context_->Acquire(),
                                 absl::Now() + options_.handshake_timeout);
  // A client that just leaves (a port probe, a stopping terminator) is
  // not worth a warning.
  const std::string reason(conn.status().message());
  if (absl::IsUnavailable(conn.status()) &&
      !absl::StrContains(reason, "unexpected eof while reading") &&
      !absl::StrContains(reason, "connection closed or reset")) {
    if (std::optional<std::string> line = handshake_log_.Admit(
            reason, absl::StrCat("HTTPS client ", peer, ": ", reason))) {
      LogWarning(*line);
    }
  }
  const int backend = conn.ok() ? ConnectBackend(backend_port_) : -1;
  if (backend < 0) return finish();
  tls::TlsConnection& client = **conn;
  std::string head;  // the request until its first line is complete
  bool inserted = false, client_done = false;
  char buf[16 << 10];
  while (true) {
    bool client_readable = !client_done && client.HasBufferedData();
    bool backend_readable = false;
    if (!client_readable) {
      // A client that finished sending is no longer polled (its hang-up
      // would wake every poll).
      pollfd p[3] = {{client_done ? -1 : client.fd(), POLLIN, 0},
                     {backend, POLLIN, 0},
                     {stop_fds_[0], POLLIN, 0}};
      const int r = poll(
          p, 3,
          static_cast<int>(absl::ToInt64Milliseconds(options_.idle_timeout)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0 || p[2].revents != 0) break;  // idle, or stopping
      client_readable = p[0].revents != 0;
      backend_readable = p[1].revents != 0;
    }
    if (client_readable) {
      absl::StatusOr<size_t> n =
          client.Read(buf, sizeof(buf), absl::InfinitePast());
      if (n.status().code() == absl::StatusCode::kDeadlineExceeded) {
        // Part of a record (or a TLS 1.3 ticket message): wait for more.
      } else if (!n.ok()) {
        break;
      } else if (*n == 0) {
        client_done = true;
        shutdown(backend, SHUT_WR);
      } else if (inserted) {
        if (!SendAll(backend, {buf, *n})) break;
      } else {
        head.append(buf, *n);
        const size_t eol = head.find('\n');
        if (eol == std::string::npos) {
          if (head.size() > kMaxRequestLine) break;
          continue;
        }
        const std::string line =
            absl::StrCat(kTlsRelayHeader, ": ", secret_, "\r\n");
        head.insert(eol + 1, line);
        inserted = true;
        if (!SendAll(backend, head)) break;
        head.clear();
      }
    }
    if (backend_readable) {
      const ssize_t n = recv(backend, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the response is complete
      if (!client
               .WriteAll({buf, static_cast<size_t>(n)},
                         absl::Now() + options_.idle_timeout)
               .ok()) {
        break;
      }
    }
  }
  client.Shutdown(absl::Now() + absl::Seconds(1));
  close(backend);
  conn->reset();
  finish();
}

}  // namespace msgq
