// A raw HTTP/2 client for tests of the gRPC front and msgqd's gRPC port
// (and msgq-chaos's hostile soak):
// it writes frames by hand (an HTTP/2 "rapid reset" flood) over TCP, in
// plaintext or TLS (OpenSSL, ALPN "h2", no certificate check), from a
// chosen loopback source address, and reads what the server sends back.
//
// Not thread-safe: one thread per client. Test code only.
#ifndef MSGQ_SERVER_GRPC_FRONT_H2_TEST_CLIENT_H_
#define MSGQ_SERVER_GRPC_FRONT_H2_TEST_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/grpc_front/h2_frame_reader.h"

namespace msgq::grpc_front::testing {

inline std::string H2Frame(uint8_t type, uint8_t flags, uint32_t stream,
                           absl::string_view payload) {
  std::string f;
  const uint32_t n = static_cast<uint32_t>(payload.size());
  f.push_back(static_cast<char>(n >> 16));
  f.push_back(static_cast<char>(n >> 8));
  f.push_back(static_cast<char>(n));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int i = 0; i < 4; ++i) {
    f.push_back(static_cast<char>(stream >> (24 - 8 * i)));
  }
  f.append(payload.data(), payload.size());
  return f;
}

// HPACK (RFC 7541) of a gRPC request's headers, without the dynamic table:
// indexed :method POST and :scheme http, literal :path, :authority,
// content-type and te.
inline std::string GrpcRequestHeaderBlock(absl::string_view path) {
  auto literal = [](std::string* out, absl::string_view value) {
    out->push_back(static_cast<char>(value.size()));  // < 127, no Huffman
    out->append(value.data(), value.size());
  };
  std::string block;
  block.push_back('\x83');  // :method POST
  block.push_back('\x86');  // :scheme http
  block.push_back('\x04');  // :path, literal without indexing
  literal(&block, path);
  block.push_back('\x01');  // :authority
  literal(&block, "localhost");
  block.append("\x0f\x10", 2);  // content-type (static index 31)
  literal(&block, "application/grpc");
  block.push_back('\x00');  // te (a new name)
  literal(&block, "te");
  literal(&block, "trailers");
  return block;
}

// One flood round for stream `id`: HEADERS, an empty DATA, RST_STREAM
// (CANCEL).
inline std::string RapidResetRound(uint32_t id, absl::string_view block) {
  return H2Frame(kH2Headers, 0x4, id, block) + H2Frame(kH2Data, 0, id, "") +
         H2Frame(kH2RstStream, 0, id, std::string("\0\0\0\x08", 4));
}

class H2TestClient {
 public:
  // Connects from `source` (a loopback address) to 127.0.0.1:`port` and,
  // with `tls`, does a TLS handshake offering ALPN h2. nullptr on failure.
  // Every read and write waits at most 5 s (then fails).
  static std::unique_ptr<H2TestClient> Connect(int port, bool tls,
                                               const char* source) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    auto client = std::unique_ptr<H2TestClient>(new H2TestClient(fd));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    const timeval limit{.tv_sec = 5, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
        connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      return nullptr;
    }
    if (tls) {
      client->ctx_ = SSL_CTX_new(TLS_client_method());
      static constexpr unsigned char kH2[] = {2, 'h', '2'};
      SSL_CTX_set_alpn_protos(client->ctx_, kH2, sizeof(kH2));
      client->ssl_ = SSL_new(client->ctx_);
      SSL_set_fd(client->ssl_, fd);
      if (SSL_connect(client->ssl_) != 1) {
        ERR_clear_error();
        return nullptr;
      }
    }
    return client;
  }
  ~H2TestClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    close(fd_);
  }

  // False once the server closed or reset the connection.
  bool Send(absl::string_view bytes) {
    while (!bytes.empty()) {
      const int n =
          ssl_ != nullptr
              ? SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()))
              : static_cast<int>(
                    send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL));
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads what the server sends until its first SETTINGS frame (true), or
  // until it closes the connection or `timeout` passes (false).
  bool WaitForSettings(absl::Duration timeout) {
    return ReadFor(timeout, /*until_settings=*/true);
  }

  // Reads (and drops) what the server sends until it closes the
  // connection or `timeout` passes. Returns whether it closed; records
  // the error code of a GOAWAY it sent.
  bool ReadUntilClosed(absl::Duration timeout) {
    return ReadFor(timeout, /*until_settings=*/false);
  }

  // The error code of the GOAWAY the server sent, if it sent one.
  std::optional<uint32_t> goaway_error() const { return goaway_error_; }

 private:
  explicit H2TestClient(int fd) : fd_(fd) {}

  // Reads until `timeout` passes (false), the server closes (true; false
  // with `until_settings`) or, with `until_settings`, a SETTINGS frame
  // came (true).
  bool ReadFor(absl::Duration timeout, bool until_settings) {
    const absl::Time deadline = absl::Now() + timeout;
    char buf[16 << 10];
    while (true) {
      const bool buffered = ssl_ != nullptr && SSL_pending(ssl_) > 0;
      if (!buffered) {
        pollfd p{fd_, POLLIN, 0};
        const int ms =
            static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
        if (ms <= 0 || poll(&p, 1, ms) <= 0) return false;
      }
      const int n = ssl_ != nullptr
                        ? SSL_read(ssl_, buf, sizeof(buf))
                        : static_cast<int>(read(fd_, buf, sizeof(buf)));
      if (n <= 0) {
        ERR_clear_error();
        return !until_settings;
      }
      bool settings = false;
      (void)reader_.Feed({buf, static_cast<size_t>(n)},
                         [&](const H2FrameHeader& h) {
                           if (h.type == kH2GoAway) goaway_at_ = reader_.fed();
                           settings |= h.type == kH2Settings;
                         });
      Collect({buf, static_cast<size_t>(n)});
      if (until_settings && settings) return true;
    }
  }

  // Keeps the bytes after a GOAWAY header until its error code is read.
  void Collect(absl::string_view bytes) {
    if (goaway_at_ == 0 || goaway_error_.has_value()) return;
    const uint64_t end = reader_.fed();
    const uint64_t start = end - bytes.size();
    for (uint64_t at = std::max(start, goaway_at_); at < end; ++at) {
      goaway_payload_.push_back(bytes[at - start]);
    }
    if (goaway_payload_.size() >= 8) {
      uint32_t code = 0;
      for (int i = 4; i < 8; ++i) {
        code = (code << 8) | static_cast<uint8_t>(goaway_payload_[i]);
      }
      goaway_error_ = code;
    }
  }

  const int fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  H2FrameReader reader_{H2FrameReader::Side::kServer};
  uint64_t goaway_at_ = 0;  // offset just after the GOAWAY's header
  std::string goaway_payload_;
  std::optional<uint32_t> goaway_error_;
};

}  // namespace msgq::grpc_front::testing

#endif  // MSGQ_SERVER_GRPC_FRONT_H2_TEST_CLIENT_H_
