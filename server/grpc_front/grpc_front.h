// GrpcFront: msgqd's gRPC port. It accepts the TCP connections itself,
// does their TLS (when configured), reads the client's HTTP/2 frames as
// they pass, and hands each connection's plaintext to the gRPC server over
// a socket pair (grpc::AddInsecureChannelFromFd).
//
// Why: the gRPC library msgqd links (1.51) has no defence against HTTP/2
// "rapid reset" (CVE-2023-44487): a client that opens a stream and resets
// it at once, thousands of times a second, makes gRPC start and tear down
// a call for each, unbounded by SETTINGS_MAX_CONCURRENT_STREAMS (reset
// streams are not open). The front counts each RST_STREAM a client sends
// for a stream gRPC has not answered yet (no HEADERS or RST_STREAM from
// gRPC on it) against its address's ResetBudget (reset_budget.h); a
// stream gRPC answered cost what any call costs, within gRPC's concurrency
// limit, and its reset is not counted. A connection whose
// address is over budget is sent GOAWAY (ENHANCE_YOUR_CALM) and closed,
// which makes gRPC cancel all its calls. The address may connect again,
// but each of its resets still waits for the budget to refill.
// docs/security.md has the limits and docs/design/grpc-front.md the
// design.
//
// Per connection the front holds two buffers of `buffer_bytes` (one each
// way) and, with TLS, one OpenSSL session; a full buffer stops reading
// from its side (backpressure), so memory is bounded by
// max_connections x (2 x buffer_bytes + a TLS session). Connections over
// max_connections are closed at once. A connection that has not finished
// its TLS handshake and sent the HTTP/2 connection preface within
// handshake_timeout of its accept is closed. With client certificates (mTLS)
// the handshake verifies them; the identities of each connection's certificate
// and its address go to the PeerDirectory (server/auth/peer_directory.h), where
// gRPC side (server/auth/grpc_auth.h) finds them by the call's peer().
//
// One thread runs every connection (epoll, non-blocking sockets and
// OpenSSL); it does no other work and never blocks.
//
// Example:
//   auto front = GrpcFront::Start(
//       {.listen = "127.0.0.1:50051", .tls = tls_context},
//       [server](int fd) { grpc::AddInsecureChannelFromFd(server, fd); },
//       &peers);
//   ...
//   (*front)->StopAccepting();   // before gRPC's Shutdown
//   server->Shutdown(deadline);  // GOAWAY through the open connections
//   (*front)->Stop();            // closes what is left
//
// Thread-safety: Start, StopAccepting and Stop from one thread (msgqd's
// main); port() and the counters from any thread.
#ifndef MSGQ_SERVER_GRPC_FRONT_GRPC_FRONT_H_
#define MSGQ_SERVER_GRPC_FRONT_GRPC_FRONT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/auth/peer_directory.h"
#include "server/grpc_front/reset_budget.h"
#include "server/tls/tls_server_context.h"

namespace msgq::grpc_front {

class GrpcFront {
 public:
  struct Options {
    // "HOST:PORT"; port 0 picks a free one (port()).
    std::string listen;
    // TLS contexts for new connections (select ALPN "h2": gRPC clients
    // require it); null: plaintext HTTP/2. Must outlive the front.
    tls::TlsServerContext* tls = nullptr;
    int max_connections = 4096;
    absl::Duration handshake_timeout = absl::Seconds(10);
    // Per direction and connection.
    size_t buffer_bytes = 64 << 10;
    // TCP_USER_TIMEOUT of client sockets: a connection whose sent data
    // stays unacknowledged this long is aborted by the kernel (as gRPC
    // sets its own sockets' to its keepalive timeout); zero: the kernel's.
    absl::Duration tcp_user_timeout = absl::ZeroDuration();
    ResetBudget::Options resets;
  };

  // Counters since Start.
  struct Counters {
    uint64_t accepted = 0;
    // Closed at accept: over max_connections.
    uint64_t refused_full = 0;
    // Closed for going over the reset budget (sent GOAWAY).
    uint64_t closed_resets = 0;
    // TLS handshakes that failed, and connections closed at
    // handshake_timeout without their TLS handshake or HTTP/2 preface;
    // clients that sent something else than the HTTP/2 preface.
    uint64_t failed_handshakes = 0;
    uint64_t not_http2 = 0;
    // RST_STREAM frames clients sent for streams gRPC had not answered.
    uint64_t resets = 0;
    int open = 0;  // connections open now
  };

  // Listens and starts the thread. `hand` takes gRPC's end of a new
  // connection's socket pair (called on the front's thread; it must not
  // block). `peers` must outlive the front. INVALID_ARGUMENT or
  // UNAVAILABLE as common/listen_socket.h's ListenTcp ("gRPC").
  static absl::StatusOr<std::unique_ptr<GrpcFront>> Start(
      Options options, std::function<void(int fd)> hand,
      auth::PeerDirectory* peers);
  ~GrpcFront();  // Stop()
  GrpcFront(const GrpcFront&) = delete;
  GrpcFront& operator=(const GrpcFront&) = delete;

  int port() const { return port_; }
  Counters counters() const;

  // Closes the listening socket; open connections go on.
  void StopAccepting();
  // Closes every connection and joins the thread. Idempotent.
  void Stop();

 private:
  struct Connection;
  class Loop;

  GrpcFront(int port, std::unique_ptr<Loop> loop);

  const int port_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace msgq::grpc_front

#endif  // MSGQ_SERVER_GRPC_FRONT_GRPC_FRONT_H_
