// TlsConnection: the server side of one TLS connection over a socket that
// was already accepted (blocking or not: it is switched to non-blocking and
// every wait is a poll() with a deadline).
//
// Waiting for data: a caller that multiplexes several sockets polls fd()
// for POLLIN, but must first check HasBufferedData(): bytes OpenSSL already
// decrypted (SSL_pending) or received do not make the fd readable again.
// Read() with `deadline` in the past never waits (DEADLINE_EXCEEDED when
// nothing is there yet).
//
// Example:
//   auto conn = TlsConnection::Accept(fd, context->Acquire(),
//                                     absl::Now() + absl::Seconds(10));
//   if (!conn.ok()) return;  // fd is closed
//   char buf[4096];
//   absl::StatusOr<size_t> n = (*conn)->Read(buf, sizeof(buf),
//                                            absl::Now() + absl::Seconds(30));
//   if (n.ok() && *n > 0) (*conn)->WriteAll({buf, *n}, deadline);
//
// Thread-safety: not thread-safe (OpenSSL's SSL objects are not): one
// thread at a time, reads and writes included. Owns the fd and closes it
// on destruction. The first Accept() makes the process ignore SIGPIPE (a
// write to a peer that left is then an error, not the end of msgqd).
#ifndef MSGQ_SERVER_TLS_TLS_CONNECTION_H_
#define MSGQ_SERVER_TLS_TLS_CONNECTION_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/tls/tls_server_context.h"

namespace msgq::tls {

class TlsConnection {
 public:
  // Takes ownership of `fd` (closed on every path) and runs the server
  // handshake with `ctx` until `deadline`. DEADLINE_EXCEEDED when the
  // client did not finish in time; UNAVAILABLE when the handshake failed
  // (the message has OpenSSL's reason, e.g. "http request" for plain HTTP,
  // "peer did not return a certificate" or "certificate verify failed"
  // with mTLS) or the peer closed the connection.
  static absl::StatusOr<std::unique_ptr<TlsConnection>> Accept(
      int fd, SslCtxPtr ctx, absl::Time deadline);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  // Reads up to `size` bytes into `buf`, waiting until `deadline` for at
  // least one. 0 when the peer closed (close_notify or EOF); afterwards
  // every Read returns 0. DEADLINE_EXCEEDED when nothing came in time (the
  // connection stays usable); UNAVAILABLE on a broken connection.
  absl::StatusOr<size_t> Read(char* buf, size_t size, absl::Time deadline);

  // Writes all of `data` by `deadline`. DEADLINE_EXCEEDED when the peer
  // did not take it in time, UNAVAILABLE on a broken connection; either
  // way part of it may have been sent and the connection is not usable.
  absl::Status WriteAll(absl::string_view data, absl::Time deadline);

  // True when a Read would return data without waiting on fd().
  bool HasBufferedData() const;

  // The identities of the client certificate: PeerIdentities(ssl) below.
  std::vector<std::string> PeerIdentities() const;
  // "TLSv1.3", "TLSv1.2".
  std::string Version() const;

  // Sends close_notify (best effort, waits at most until `deadline` for
  // the socket to take it). The fd stays open until destruction.
  void Shutdown(absl::Time deadline);

  int fd() const { return fd_; }

 private:
  TlsConnection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  // Waits for fd_ to be readable (want_write: writable) until `deadline`.
  // False when the deadline passed.
  bool Wait(bool want_write, absl::Time deadline) const;

  const int fd_;
  SSL* const ssl_;
  bool closed_ = false;  // the peer closed or the connection broke
};

// The identities of the client certificate of `ssl` (verified against the
// client CA when one is configured), by the rule gRPC 1.51 applies to its
// peers (its auth context's peer identity), so that one certificate is one
// principal on every port (server/auth/grpc_auth.h):
//   - with a subjectAltName extension, each of its names in certificate
//     order: DNS, email and URI names as UTF-8, IP addresses as
//     inet_ntop text ("127.0.0.1", "::1"), any other kind as the literal
//     "other types of SAN" (gRPC's placeholder);
//   - else the first common name of the subject.
// The Authorizer takes the first (authorizer.h). Empty names are left
// out (no principal ""); an IP address of another length than 4 or 16
// bytes (gRPC fails the handshake) or a name that is not valid ASN.1
// text makes the whole list empty. Empty without a certificate.
std::vector<std::string> PeerIdentities(const SSL* ssl);

}  // namespace msgq::tls

#endif  // MSGQ_SERVER_TLS_TLS_CONNECTION_H_
