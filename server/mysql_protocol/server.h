// MysqlProtocolServer: msgqd's MySQL client/server protocol port, where any
// MySQL client receives messages with `stream * from TABLE` (like Vitess's
// vtgate). A small, strict server for that one purpose, not a proxy.
//
// One thread accepts; each client gets a thread of its own (Connection),
// so the port's threads are bounded by twice max_connections (clients and
// displaced clients whose threads are ending) plus the accept thread. When no
// thread can be started (the host is out of threads or memory) the client gets
// ERR 1040 "Too many connections (no thread: REASON)" and msgqd goes on.
// Budgets (Options), each refusal an ERR packet and a close, logged at most
// once a minute per reason. A client address is the IPv4 address or the
// /64 of an IPv6 one (ClientAddressKey, common/host_port.h).
//   - at most max_handshakes_per_address clients of one address not
//     logged in yet (the login has handshake_timeout): one more from that
//     address gets ERR 1040 naming the address;
//   - at most max_connections clients at once, of which at most
//     max_handshakes not logged in yet. A client arriving when either is
//     reached displaces the oldest not-logged-in client of the address
//     that has the most of them, if that address has more than the
//     newcomer's (the displaced socket is shut down without an answer);
//     else it gets ERR 1040 "Too many connections" before the greeting.
//     So clients that never log in, from however many addresses, cannot
//     keep a client of an address with fewer of them out, and logged-in
//     clients keep at least max_connections - max_handshakes slots;
//   - at most max_connections_per_principal logged-in connections of one
//     principal (token and certificate logins; logins with
//     --mysql_protocol_user or the loopback anonymous login are one tenant
//     and have only the total): the next gets ERR 1203 "User P already has
//     more than 'max_user_connections' active connections" instead of the
//     login's OK. Connections count, streaming or not.
// Connection ids (the greeting's thread id, what KILL names) are random
// non-zero 32-bit numbers, unique among the open connections, so that one
// client cannot guess another's. Stop() shuts every socket down (ending its
// stream: unsubscribed, its messages handed back) and joins every thread;
// call it before stopping the engine.
//
// Example:
//   auto server = MysqlProtocolServer::Start(options, &engine);
//   ... (*server)->port() ...
//   (*server)->Stop();
//
// Thread-safe.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_SERVER_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_SERVER_H_

#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/monotonic_cond_var.h"
#include "engine/engine.h"
#include "server/mysql_protocol/connection.h"

namespace msgq::mysql_protocol {

class MysqlProtocolServer {
 public:
  struct Options {
    // host:port ([v6]:port); port 0 picks a free one.
    std::string listen = "127.0.0.1:15306";
    int max_connections = 64;
    // Logged-in connections of one principal; 0: only max_connections.
    int max_connections_per_principal = 16;
    // Connections of one address not logged in yet; 0: only
    // max_connections.
    int max_handshakes_per_address = 16;
    // Connections not logged in yet, of all addresses; 0: only
    // max_connections.
    int max_handshakes = 32;
    ConnectionOptions connection;
  };

  // Binds and starts accepting. INVALID_ARGUMENT for a malformed address,
  // no user and no Authorizer requiring credentials on an address that is
  // not loopback (anyone could read the queues), or a user together with
  // such an Authorizer (one way to log in, not two); UNAVAILABLE when the
  // address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MysqlProtocolServer>> Start(
      Options options, Engine* engine);
  ~MysqlProtocolServer();  // Stop()

  int port() const { return port_; }
  // Idempotent.
  void Stop();

 private:
  struct Client {
    int fd = -1;
    std::string address;  // the peer's, as LogRefusal and the limit see it
    std::unique_ptr<Connection> connection;
    std::thread thread;
    bool logging_in = true;  // counted in logging_in_[address]
    bool logged_in = false;  // `owner` is set
    bool counted = false;    // counted in connections_of_[owner]
    std::string owner;
    uint64_t admitted = 0;   // order of admission (the oldest displaced)
    bool displaced = false;  // shut down for a newcomer; counted in displaced_
    bool done = false;
  };
  // The server's side of its connections (connection.h).
  class Host : public ConnectionHost {
   public:
    explicit Host(MysqlProtocolServer* server) : server_(server) {}
    absl::Status LoggedIn(uint32_t id, const std::string& owner,
                          bool limited) override;
    absl::Status Kill(uint32_t caller, uint32_t target, bool connection,
                      bool admin) override;
    void LogRefusal(absl::string_view reason,
                    absl::string_view detail) override;

   private:
    MysqlProtocolServer* const server_;
  };

  MysqlProtocolServer(Options options, Engine* engine, int listen_fd, int port);
  void AcceptLoop();
  // Admits a new client (under mu_): its id, or the refusal to send.
  absl::StatusOr<uint32_t> Admit(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Shuts down the oldest not-logged-in client of the address with the
  // most of them, if it has more than `address`; whether it did.
  bool DisplaceFor(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Serve(uint32_t id, int fd, Connection* connection);
  // Ends `client`'s login phase in the per-address count.
  void StopLoggingIn(Client& client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins and closes the clients whose threads ended.
  void Reap();

  const Options options_;
  Engine* const engine_;
  const int listen_fd_;
  const int port_;
  Host host_{this};
  LogRepeatLimiter refusals_;
  std::thread accept_thread_;

  absl::Mutex mu_;
  MonotonicCondVar wake_;  // Stop()
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint32_t, Client> clients_ ABSL_GUARDED_BY(mu_);
  // Clients not logged in yet, by address, and their sum.
  std::map<std::string, int> logging_in_ ABSL_GUARDED_BY(mu_);
  int logging_in_total_ ABSL_GUARDED_BY(mu_) = 0;
  // Clients of clients_ displaced (not counted against the limits).
  int displaced_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t admitted_ ABSL_GUARDED_BY(mu_) = 0;
  // Logged-in connections counted against the per-principal limit.
  std::map<std::string, int> connections_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_SERVER_H_
