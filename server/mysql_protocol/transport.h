// Transport: the byte stream under one MySQL-protocol connection. The
// connection starts on a PlainTransport (the socket); after an SSLRequest
// it continues on a TlsTransport over the same socket.
//
// Contract: Write sends all bytes or fails; Read blocks for at least one
// byte. Both fail with UNAVAILABLE (peer closed, socket error, or TLS
// failure); no Transport closes the fd (MysqlProtocolServer does). A
// caller that poll()s fd() for readability must first check Buffered():
// TLS may already hold decrypted bytes the fd no longer signals.
//
// Thread-compatible: one connection thread uses it. shutdown(2) on the fd
// from another thread (Stop, KILL CONNECTION) makes a blocked call fail.
#ifndef MSGQ_SERVER_MYSQL_PROTOCOL_TRANSPORT_H_
#define MSGQ_SERVER_MYSQL_PROTOCOL_TRANSPORT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/tls/tls_connection.h"

namespace msgq::mysql_protocol {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual absl::Status Write(absl::string_view bytes) = 0;
  // Appends what arrived (at least one byte, at most `max`) to `out`;
  // DEADLINE_EXCEEDED when nothing came by `deadline`.
  virtual absl::Status Read(std::string& out, absl::Time deadline,
                            size_t max) = 0;
  // Whether Read would return without waiting for the fd.
  virtual bool Buffered() const = 0;
  virtual int fd() const = 0;
  // Whether the bytes are encrypted (TLS).
  virtual bool secure() const = 0;
};

// The socket itself.
class PlainTransport : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  absl::Status Write(absl::string_view bytes) override;
  // Blocks in recv() whatever the deadline: call it when poll() said the
  // fd is readable.
  absl::Status Read(std::string& out, absl::Time deadline, size_t max) override;
  bool Buffered() const override { return false; }
  int fd() const override { return fd_; }
  bool secure() const override { return false; }

 private:
  const int fd_;
};

// TLS over the socket (a dup of it, owned by `connection`); writes wait
// without a deadline (back pressure, as on the plain socket).
class TlsTransport : public Transport {
 public:
  explicit TlsTransport(std::unique_ptr<tls::TlsConnection> connection)
      : connection_(std::move(connection)) {}
  absl::Status Write(absl::string_view bytes) override;
  absl::Status Read(std::string& out, absl::Time deadline, size_t max) override;
  bool Buffered() const override { return connection_->HasBufferedData(); }
  int fd() const override { return connection_->fd(); }
  bool secure() const override { return true; }

 private:
  const std::unique_ptr<tls::TlsConnection> connection_;
};

// Whether the peer of connected socket `fd` is a loopback address
// (127/8, ::1, or ::ffff:127/104); false when it cannot be told.
bool IsLoopbackPeer(int fd);

}  // namespace msgq::mysql_protocol

#endif  // MSGQ_SERVER_MYSQL_PROTOCOL_TRANSPORT_H_
