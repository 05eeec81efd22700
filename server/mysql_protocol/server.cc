#include "server/mysql_protocol/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/host_port.h"
#include "common/log.h"
#include "server/mysql_protocol/command.h"

namespace msgq::mysql_protocol {
namespace {

// The client's address as text ("127.0.0.1", "::1"; an IPv4-mapped IPv6
// address as the IPv4 one), the key of the per-address limit.
std::string AddressText(const sockaddr_storage& peer) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&peer)->sin_addr,
              buf, sizeof(buf));
  } else if (peer.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
      inet_ntop(AF_INET, &a.s6_addr[12], buf, sizeof(buf));
    } else {
      inet_ntop(AF_INET6, &a, buf, sizeof(buf));
    }
  }
  return buf;
}

// Decrements `key`'s count, forgetting it at zero.
void Decrement(std::map<std::string, int>& counts, const std::string& key) {
  auto it = counts.find(key);
  if (it != counts.end() && --it->second <= 0) counts.erase(it);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MysqlProtocolServer>> MysqlProtocolServer::Start(
    Options options, Engine* engine) {
  absl::StatusOr<HostPort> address = ParseHostPort(options.listen);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mysql_protocol_listen '", options.listen,
                     "': ", address.status().message()));
  }
  const std::string& host = address->host;
  const std::string port = absl::StrCat(*address->port);
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
      port_(port),
      refusals_(RealClock::Get()) {}

MysqlProtocolServer::~MysqlProtocolServer() { Stop(); }

void MysqlProtocolServer::AcceptLoop() {
  while (true) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer),
                           &peer_len, SOCK_CLOEXEC);
    Reap();
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      // EMFILE and the like: back off a little instead of spinning.
      LogWarning("MySQL protocol accept: ", strerror(errno));
      wake_.WaitFor(&mu_, absl::Milliseconds(100));
      if (stopping_) return;
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const std::string address = AddressText(peer);
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      close(fd);
      return;
    }
    absl::StatusOr<uint32_t> id = Admit(address);
    if (!id.ok()) {
      // A tiny write to a fresh socket: it does not block.
      const std::string err =
          ErrPacket(0, kErConCount, "08004", id.status().message());
      (void)!send(fd, err.data(), err.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    Client& client = clients_[*id];
    client.fd = fd;
    client.address = address;
    ++logging_in_[address];
    client.connection = std::make_unique<Connection>(
        fd, *id, address, options_.connection, engine_, &host_);
    client.thread =
        std::thread([this, id = *id, fd, c = client.connection.get()] {
          Serve(id, fd, c);
        });
  }
}

absl::StatusOr<uint32_t> MysqlProtocolServer::Admit(
    const std::string& address) {
  if (clients_.size() >= static_cast<size_t>(options_.max_connections)) {
    host_.LogRefusal("too many connections (--mysql_protocol_max_connections)",
                     absl::StrCat("from ", address));
    return absl::ResourceExhaustedError("Too many connections");
  }
  if (const int limit = options_.max_handshakes_per_address; limit > 0) {
    auto it = logging_in_.find(address);
    if (it != logging_in_.end() && it->second >= limit) {
      host_.LogRefusal(
          "too many connections logging in from one address "
          "(--mysql_protocol_max_handshakes_per_address)",
          absl::StrCat("from ", address));
      return absl::ResourceExhaustedError(absl::StrCat(
          "Too many connections from ", address,
          " not logged in yet (--mysql_protocol_max_handshakes_per_address)"));
    }
  }
  // Random, so that a client cannot guess the id of another's connection
  // (KILL names it); unique among the open ones, and never 0.
  while (true) {
    uint32_t id = 0;
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&id), sizeof(id)) != 1) {
      return absl::InternalError("Out of resources: no random connection id");
    }
    if (id != 0 && clients_.find(id) == clients_.end()) return id;
  }
}

void MysqlProtocolServer::StopLoggingIn(Client& client) {
  if (!client.logging_in) return;
  client.logging_in = false;
  Decrement(logging_in_, client.address);
}

absl::Status MysqlProtocolServer::Host::LoggedIn(uint32_t id,
                                                 const std::string& owner,
                                                 bool limited) {
  MysqlProtocolServer& s = *server_;
  absl::MutexLock lock(&s.mu_);
  auto it = s.clients_.find(id);
  if (it == s.clients_.end()) {
    return absl::UnavailableError("msgqd is stopping");
  }
  Client& client = it->second;
  s.StopLoggingIn(client);
  const int limit = s.options_.max_connections_per_principal;
  if (limited && limit > 0) {
    auto counted = s.connections_of_.find(owner);
    if (counted != s.connections_of_.end() && counted->second >= limit) {
      // MySQL's ER_TOO_MANY_USER_CONNECTIONS text.
      return absl::ResourceExhaustedError(absl::StrCat(
          "User ", owner,
          " already has more than 'max_user_connections' active connections "
          "(--mysql_protocol_max_connections_per_principal=",
          limit, ")"));
    }
    ++s.connections_of_[owner];
    client.counted = true;
  }
  client.owner = owner;
  client.logged_in = true;
  return absl::OkStatus();
}

absl::Status MysqlProtocolServer::Host::Kill(uint32_t caller, uint32_t target,
                                             bool connection, bool admin) {
  MysqlProtocolServer& s = *server_;
  absl::MutexLock lock(&s.mu_);
  auto from = s.clients_.find(caller);
  auto it = s.clients_.find(target);
  const bool exists = it != s.clients_.end() && !it->second.done;
  const bool own = exists && from != s.clients_.end() &&
                   from->second.logged_in && it->second.logged_in &&
                   it->second.owner == from->second.owner;
  // Another owner's connection is answered like one that does not exist:
  // the caller learns nothing of the ids in use.
  if (!exists || !(own || admin)) {
    return absl::NotFoundError(absl::StrCat("Unknown thread id: ", target));
  }
  if (connection) {
    // Its thread sees the socket end and leaves (fd closed only at reap).
    shutdown(it->second.fd, SHUT_RDWR);
  } else {
    it->second.connection->Interrupt();
  }
  return absl::OkStatus();
}

void MysqlProtocolServer::Host::LogRefusal(absl::string_view reason,
                                           absl::string_view detail) {
  std::optional<std::string> line = server_->refusals_.Admit(
      std::string(reason),
      absl::StrCat("MySQL protocol: ", reason, "; last: ", detail));
  if (line.has_value()) LogWarning(*line);
}

void MysqlProtocolServer::Serve(uint32_t id, int fd, Connection* connection) {
  connection->Run();
  shutdown(fd, SHUT_RDWR);
  absl::MutexLock lock(&mu_);
  // Gone from the map once Stop() took over the joining.
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  Client& client = it->second;
  StopLoggingIn(client);
  if (client.counted) {
    client.counted = false;
    Decrement(connections_of_, client.owner);
  }
  client.done = true;
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
    wake_.SignalAll();
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
