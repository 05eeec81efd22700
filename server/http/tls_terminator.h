// TlsTerminator: HTTPS in front of the HTTP server. It listens on the
// public address, does TLS with a tls::TlsServerContext (rotation, mTLS)
// and relays the plaintext bytes of each connection to a backend port on
// 127.0.0.1 (civetweb, see HttpServer), which never faces the network.
//
// Why: Debian 12's civetweb (1.15) cannot do TLS with OpenSSL 3 (it looks
// up SSL_get_peer_certificate, which OpenSSL 3 no longer exports).
//
// One thread per connection, at most Options::max_connections of them; a
// connection beyond is closed at once. A client that does not finish its
// handshake within Options::handshake_timeout, or sends and receives
// nothing for Options::idle_timeout, is dropped, so a silent client holds
// one slot for a bounded time and never blocks the others. A failed
// handshake is logged with the client's address (a warning, each reason at
// most once a minute). The backend
// serves one request per connection (no keep-alive), so a connection ends
// when the backend closes it.
//
// Every relayed request gets the header "X-Msgq-Tls-Relay: <secret>"
// inserted after its request line (the secret is random per terminator);
// HttpServer answers requests on the backend port without it with 421, so
// a local user cannot bypass TLS or the client-certificate check by
// connecting to the backend port.
//
// Thread-safety: Start and the destructor from one thread; the destructor
// wakes every connection thread (handshakes included), closes the listener
// and joins them all.
#ifndef MSGQ_SERVER_HTTP_TLS_TERMINATOR_H_
#define MSGQ_SERVER_HTTP_TLS_TERMINATOR_H_

#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/log.h"
#include "server/tls/tls_server_context.h"

namespace msgq {

// The header the terminator adds to each request (lowercase: as HttpServer
// sees header names).
inline constexpr char kTlsRelayHeader[] = "x-msgq-tls-relay";

class TlsTerminator {
 public:
  struct Options {
    int max_connections = 64;
    absl::Duration handshake_timeout = absl::Seconds(10);
    absl::Duration idle_timeout = absl::Seconds(60);
  };

  // Listens on `listen` ("HOST:PORT", port 0 picks one) and relays to
  // 127.0.0.1:`backend_port`, adding `secret` to each request.
  // `context` must outlive the terminator. UNAVAILABLE when it cannot
  // listen.
  static absl::StatusOr<std::unique_ptr<TlsTerminator>> Start(
      const std::string& listen, int backend_port, std::string secret,
      tls::TlsServerContext* context, Options options);
  ~TlsTerminator();
  TlsTerminator(const TlsTerminator&) = delete;
  TlsTerminator& operator=(const TlsTerminator&) = delete;

  int port() const { return port_; }

 private:
  struct Connection {
    std::thread thread;
    // A dup of the client socket, closed after the join: shutdown() on it
    // wakes a handshake in progress when the terminator stops.
    int wake_fd = -1;
    bool done = false;
  };
  TlsTerminator(int backend_port, std::string secret,
                tls::TlsServerContext* context, Options options)
      : backend_port_(backend_port),
        secret_(std::move(secret)),
        context_(context),
        options_(options) {}
  void AcceptLoop();
  void Serve(int fd, std::string peer, Connection* self);
  // Joins the threads of finished connections.
  void Reap() ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after Start.
  const int backend_port_;
  const std::string secret_;
  tls::TlsServerContext* const context_;
  const Options options_;
  int listen_fd_ = -1;
  int port_ = 0;
  // Readable once the terminator stops (wakes every poll()).
  int stop_fds_[2] = {-1, -1};
  std::thread acceptor_;
  // Failed handshakes (a plain HTTP client, a missing or foreign client
  // certificate) are logged, each reason at most once a minute.
  LogRepeatLimiter handshake_log_{RealClock::Get()};

  absl::Mutex mu_;
  std::list<Connection> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_TLS_TERMINATOR_H_
