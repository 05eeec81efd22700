#include "server/mysql_protocol/server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/log.h"
#include "server/mysql_protocol/command.h"

namespace msgq::mysql_protocol {
namespace {

absl::Status SplitHostPort(absl::string_view listen, std::string& host,
                           std::string& port) {
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mysql_protocol_listen '", listen, "': want HOST:PORT"));
  }
  absl::string_view h = listen.substr(0, colon);
  if (absl::ConsumePrefix(&h, "[")) absl::ConsumeSuffix(&h, "]");
  host = std::string(h);
  port = std::string(listen.substr(colon + 1));
  int n = 0;
  if (!absl::SimpleAtoi(port, &n) || n < 0 || n > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mysql_protocol_listen '", listen, "': bad port"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsLoopbackHost(absl::string_view host) {
  return absl::StartsWith(host, "127.") || host == "::1" ||
         absl::EqualsIgnoreCase(host, "localhost");
}

absl::StatusOr<std::unique_ptr<MysqlProtocolServer>> MysqlProtocolServer::Start(
    Options options, Engine* engine) {
  std::string host, port;
  if (absl::Status s = SplitHostPort(options.listen, host, port); !s.ok()) {
    return s;
  }
  const auth::Authorizer* authorizer = options.connection.authorizer;
  const bool tokens = authorizer != nullptr && authorizer->required();
  if (tokens && !options.connection.user.empty()) {
    return absl::InvalidArgumentError(
        "--mysql_protocol_user does not go with --auth_tokens_file or "
        "--tls_client_ca: the MySQL protocol port then takes the bearer "
        "tokens (the token as the password, its principal as the user)");
  }
  if (!tokens && options.connection.user.empty() && !IsLoopbackHost(host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mysql_protocol_listen '", options.listen,
        "' is not a loopback address: set --mysql_protocol_user and "
        "--mysql_protocol_password_file"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int e = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(),
                          &hints, &found);
      e != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mysql_protocol_listen '", options.listen, "': ", gai_strerror(e)));
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      error = strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.listen, " (MySQL protocol): ", error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int bound_port =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  auto server = std::unique_ptr<MysqlProtocolServer>(
      new MysqlProtocolServer(std::move(options), engine, fd, bound_port));
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

MysqlProtocolServer::MysqlProtocolServer(Options options, Engine* engine,
                                         int listen_fd, int port)
    : options_(std::move(options)),
      engine_(engine),
      listen_fd_(listen_fd),
      port_(port) {}

MysqlProtocolServer::~MysqlProtocolServer() { Stop(); }

void MysqlProtocolServer::AcceptLoop() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    Reap();
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      // EMFILE and the like: back off a little instead of spinning.
      LogWarning("MySQL protocol accept: ", strerror(errno));
      mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                           absl::Milliseconds(100));
      if (stopping_) return;
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      close(fd);
      return;
    }
    if (clients_.size() >= static_cast<size_t>(options_.max_connections)) {
      // A tiny write to a fresh socket: it does not block.
      const std::string err =
          ErrPacket(0, kErConCount, "08004", "Too many connections");
      (void)!send(fd, err.data(), err.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    const uint32_t id = next_id_++;
    Client& client = clients_[id];
    client.fd = fd;
    client.connection =
        std::make_unique<Connection>(fd, id, options_.connection, engine_,
                                     [this](uint32_t target, bool connection) {
                                       return Kill(target, connection);
                                     });
    client.thread = std::thread(
        [this, id, fd, c = client.connection.get()] { Serve(id, fd, c); });
  }
}

bool MysqlProtocolServer::Kill(uint32_t id, bool connection) {
  absl::MutexLock lock(&mu_);
  auto it = clients_.find(id);
  if (it == clients_.end() || it->second.done) return false;
  if (connection) {
    // Its thread sees the socket end and leaves (fd closed only at reap).
    shutdown(it->second.fd, SHUT_RDWR);
  } else {
    it->second.connection->Interrupt();
  }
  return true;
}

void MysqlProtocolServer::Serve(uint32_t id, int fd, Connection* connection) {
  connection->Run();
  shutdown(fd, SHUT_RDWR);
  absl::MutexLock lock(&mu_);
  // Gone from the map once Stop() took over the joining.
  if (auto it = clients_.find(id); it != clients_.end()) it->second.done = true;
}

void MysqlProtocolServer::Reap() {
  std::vector<Client> done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (it->second.done) {
        done.push_back(std::move(it->second));
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Client& c : done) {
    c.thread.join();
    close(c.fd);
  }
}

void MysqlProtocolServer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [id, client] : clients_) shutdown(client.fd, SHUT_RDWR);
  }
  shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  close(listen_fd_);
  std::map<uint32_t, Client> clients;
  {
    absl::MutexLock lock(&mu_);
    clients.swap(clients_);
  }
  for (auto& [id, client] : clients) {
    client.thread.join();
    close(client.fd);
  }
}

}  // namespace msgq::mysql_protocol
