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
#include <functional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/host_port.h"
#include "common/log.h"
#include "server/mysql_protocol/command.h"

namespace msgq::mysql_protocol {
namespace {

// Starts `body` on a thread of its own; std::thread reports a failure
// (EAGAIN: out of threads or memory) only by throwing.
absl::StatusOr<std::thread> StartThread(std::function<void()> body) {
  try {
    return std::thread(std::move(body));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(e.what());
  }
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
  absl::StatusOr<std::thread> accept =
      StartThread([s = server.get()] { s->AcceptLoop(); });
  if (!accept.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "MySQL protocol: no accept thread: ", accept.status().message()));
  }
  server->accept_thread_ = *std::move(accept);
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
    const std::string address =
        ClientAddressKey(reinterpret_cast<const sockaddr*>(&peer));
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      close(fd);
      return;
    }
    // A tiny write to a fresh socket: it does not block.
    auto refuse = [fd](absl::string_view message) {
      const std::string err = ErrPacket(0, kErConCount, "08004", message);
      (void)!send(fd, err.data(), err.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
    };
    absl::StatusOr<uint32_t> id = Admit(address);
    if (!id.ok()) {
      refuse(id.status().message());
      continue;
    }
    Client& client = clients_[*id];
    client.fd = fd;
    client.address = address;
    client.admitted = ++admitted_;
    ++logging_in_[address];
    ++logging_in_total_;
    client.connection = std::make_unique<Connection>(
        fd, *id, address, options_.connection, engine_, &host_);
    absl::StatusOr<std::thread> thread =
        StartThread([this, id = *id, fd, c = client.connection.get()] {
          Serve(id, fd, c);
        });
    if (!thread.ok()) {
      host_.LogRefusal(
          "no thread for a connection",
          absl::StrCat("from ", address, ": ", thread.status().message()));
      StopLoggingIn(client);
      clients_.erase(*id);
      refuse(absl::StrCat(
          "Too many connections (no thread: ", thread.status().message(), ")"));
      continue;
    }
    client.thread = *std::move(thread);
  }
}

absl::StatusOr<uint32_t> MysqlProtocolServer::Admit(
    const std::string& address) {
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
  const int open = static_cast<int>(clients_.size()) - displaced_;
  const bool full = open >= options_.max_connections;
  const bool handshakes_full = options_.max_handshakes > 0 &&
                               logging_in_total_ >= options_.max_handshakes;
  if ((full || handshakes_full) && !DisplaceFor(address)) {
    host_.LogRefusal(full ? "too many connections "
                            "(--mysql_protocol_max_connections)"
                          : "too many connections logging in "
                            "(--mysql_protocol_max_handshakes)",
                     absl::StrCat("from ", address));
    return absl::ResourceExhaustedError("Too many connections");
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

bool MysqlProtocolServer::DisplaceFor(const std::string& address) {
  // Displaced clients' threads end as soon as they see their sockets shut
  // down; until reaped they count here, so that the threads stay bounded.
  if (displaced_ >= options_.max_connections) return false;
  auto own = logging_in_.find(address);
  const int own_count = own == logging_in_.end() ? 0 : own->second;
  auto most = logging_in_.end();
  for (auto it = logging_in_.begin(); it != logging_in_.end(); ++it) {
    if (most == logging_in_.end() || it->second > most->second) most = it;
  }
  if (most == logging_in_.end() || most->second <= own_count) return false;
  Client* oldest = nullptr;
  for (auto& [id, client] : clients_) {
    if (client.logging_in && !client.displaced &&
        client.address == most->first &&
        (oldest == nullptr || client.admitted < oldest->admitted)) {
      oldest = &client;
    }
  }
  if (oldest == nullptr) return false;
  host_.LogRefusal(
      "displaced a connection not logged in yet for a client of another "
      "address (--mysql_protocol_max_connections, "
      "--mysql_protocol_max_handshakes)",
      absl::StrCat(oldest->address, " for ", address));
  oldest->displaced = true;
  ++displaced_;
  StopLoggingIn(*oldest);
  // Its thread sees the socket end and leaves (fd closed only at reap).
  shutdown(oldest->fd, SHUT_RDWR);
  return true;
}

void MysqlProtocolServer::StopLoggingIn(Client& client) {
  if (!client.logging_in) return;
  client.logging_in = false;
  --logging_in_total_;
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
  if (client.displaced) {
    return absl::UnavailableError("displaced by a client of another address");
  }
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
        if (it->second.displaced) --displaced_;
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
