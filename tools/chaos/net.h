// Loopback client sockets for the hostile soak (hostile.h, probes.h): TCP
// connects to 127.0.0.1 with a deadline, TLS client sessions (OpenSSL), one
// HTTP(S) exchange, the state of a held connection, and a registry that
// unblocks every socket in use when a soak stops.
//
// Every call is bounded: a connect, a handshake, a read or a write that has
// not finished by its deadline fails with DEADLINE_EXCEEDED. Only 127.0.0.1
// is ever connected to.
//
// Thread-safety: TlsClientContext and SocketRegistry are thread-safe;
// a TlsSocket is used by one thread at a time.
#ifndef MSGQ_TOOLS_CHAOS_NET_H_
#define MSGQ_TOOLS_CHAOS_NET_H_

#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace msgq::chaos {

// Sockets a stopping soak must unblock. A registered socket is shut down
// (shutdown(2), not closed: its owner still closes it) by ShutdownAll, and
// at once when registered after ShutdownAll.
class SocketRegistry {
 public:
  void Add(int fd);
  // Call before closing `fd`, so ShutdownAll never touches a reused number.
  void Remove(int fd);
  void ShutdownAll();

 private:
  absl::Mutex mu_;
  std::set<int> fds_ ABSL_GUARDED_BY(mu_);
  bool shut_ ABSL_GUARDED_BY(mu_) = false;
};

// A socket registered for its lifetime (closes it).
class Socket {
 public:
  Socket(int fd, SocketRegistry* registry);
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  const int fd_;
  SocketRegistry* const registry_;
};

// A TCP connection to 127.0.0.1:`port` made before `deadline`.
// UNAVAILABLE (refused, reset...) with the errno text, DEADLINE_EXCEEDED.
absl::StatusOr<std::unique_ptr<Socket>> ConnectLoopback(
    int port, absl::Time deadline, SocketRegistry* registry);

// Writes all of `bytes` before `deadline` (no SIGPIPE).
absl::Status SendAll(int fd, absl::string_view bytes, absl::Time deadline);

// What the server did with a connection held open: "open" (nothing
// arrived), "open, server sent data" (e.g. a greeting or an error), or
// "closed by server" (EOF or reset). Reads and drops what arrived; does
// not block.
std::string HeldState(int fd);

// A client TLS context trusting `ca_file` and checking that the server's
// certificate is for 127.0.0.1.
class TlsClientContext {
 public:
  // INVALID_ARGUMENT when the CA file cannot be loaded.
  static absl::StatusOr<std::unique_ptr<TlsClientContext>> Create(
      const std::string& ca_file);
  ~TlsClientContext();
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsClientContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* const ctx_;
};

class TlsSocket {
 public:
  // TCP connect and TLS handshake before `deadline`. UNAVAILABLE (refused,
  // closed, handshake failure with OpenSSL's reason), DEADLINE_EXCEEDED.
  static absl::StatusOr<std::unique_ptr<TlsSocket>> Connect(
      const TlsClientContext& context, int port, absl::Time deadline,
      SocketRegistry* registry);
  ~TlsSocket();

  int fd() const { return socket_->fd(); }
  absl::Status Write(absl::string_view bytes, absl::Time deadline);
  // Up to `max` bytes; "" at the server's close (or its close_notify).
  absl::StatusOr<std::string> Read(size_t max, absl::Time deadline);
  // HeldState (below) read through TLS: what arrives after the handshake
  // (TLS 1.3 session tickets) is not the server's answer. Reads and drops
  // what arrived; does not block.
  std::string HeldState();

 private:
  TlsSocket(std::unique_ptr<Socket> socket, SSL* ssl)
      : socket_(std::move(socket)), ssl_(ssl) {}
  std::unique_ptr<Socket> socket_;
  SSL* const ssl_;
};

struct HttpAnswer {
  int status = 0;  // of the status line
  std::string status_line;
  int64_t body_bytes = 0;
};

// Sends `request` (a complete HTTP/1.1 request; it should say
// "Connection: close") over a new TLS connection and reads the answer: the
// headers and Content-Length bytes of body, or up to the server's close.
// UNAVAILABLE when the connection or handshake fails or the server closes
// before a status line, DEADLINE_EXCEEDED.
absl::StatusOr<HttpAnswer> HttpsExchange(const TlsClientContext& context,
                                         int port, absl::string_view request,
                                         absl::Time deadline,
                                         SocketRegistry* registry);

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_NET_H_
