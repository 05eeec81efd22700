// MysqlProtocolServer: msgqd's MySQL client/server protocol port, where any
// MySQL client receives messages with `stream * from TABLE` (like Vitess's
// vtgate). A small, strict server for that one purpose, not a proxy.
//
// One thread accepts; each client gets a thread of its own (Connection),
// at most Options::max_connections at once: one more gets ERR 1040 "Too
// many connections" and is closed. Stop() shuts every socket down (ending
// its stream: unsubscribed, its messages handed back) and joins every
// thread; call it before stopping the engine.
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
#include "engine/engine.h"
#include "server/mysql_protocol/connection.h"

namespace msgq::mysql_protocol {

class MysqlProtocolServer {
 public:
  struct Options {
    // host:port ([v6]:port); port 0 picks a free one.
    std::string listen = "127.0.0.1:15306";
    int max_connections = 64;
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
    std::unique_ptr<Connection> connection;
    std::thread thread;
    bool done = false;
  };
  MysqlProtocolServer(Options options, Engine* engine, int listen_fd, int port);
  void AcceptLoop();
  void Serve(uint32_t id, int fd, Connection* connection);
  // KILL [QUERY|CONNECTION] id; false when there is no such client.
  bool Kill(uint32_t id, bool connection);
  // Joins and closes the clients whose threads ended.
  void Reap();

  const Options options_;
  Engine* const engine_;
  const int listen_fd_;
  const int port_;
  std::thread accept_thread_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint32_t, Client> clients_ ABSL_GUARDED_BY(mu_);
};

// Whether `host` (of a listen address) is a loopback address (127/8, ::1,
// localhost).
bool IsLoopbackHost(absl::string_view host);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_SERVER_H_
