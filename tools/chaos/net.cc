#include "tools/chaos/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace msgq::chaos {
namespace {

constexpr size_t kMaxAnswerBytes = 4 << 20;

// Waits until `fd` is ready for `events` or `deadline`.
absl::Status WaitFd(int fd, short events, absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("timed out");
    }
    pollfd p{fd, events, 0};
    const int ms = static_cast<int>(
        std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000));
    const int r = poll(&p, 1, ms);
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("poll: ", strerror(errno)));
    }
  }
}

std::string SslReason() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return errno != 0 ? strerror(errno) : "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  // "error:0A000126:SSL routines::unexpected eof while reading" -> the
  // reason only.
  const char* last = strrchr(buf, ':');
  return last != nullptr && last[1] != '\0' ? last + 1 : buf;
}

// Runs an SSL call until it completes, waiting on the socket as OpenSSL
// asks. Returns the call's positive result, 0 for a clean close
// (SSL_ERROR_ZERO_RETURN), or an error.
template <typename F>
absl::StatusOr<int> RunSsl(SSL* ssl, int fd, absl::Time deadline, F call) {
  while (true) {
    ERR_clear_error();
    errno = 0;
    const int r = call();
    if (r > 0) return r;
    switch (SSL_get_error(ssl, r)) {
      case SSL_ERROR_ZERO_RETURN:
        return 0;
      case SSL_ERROR_WANT_READ:
        if (absl::Status s = WaitFd(fd, POLLIN, deadline); !s.ok()) return s;
        break;
      case SSL_ERROR_WANT_WRITE:
        if (absl::Status s = WaitFd(fd, POLLOUT, deadline); !s.ok()) return s;
        break;
      default:
        return absl::UnavailableError(SslReason());
    }
  }
}

}  // namespace

void SocketRegistry::Add(int fd) {
  absl::MutexLock lock(&mu_);
  fds_.insert(fd);
  if (shut_) shutdown(fd, SHUT_RDWR);
}

void SocketRegistry::Remove(int fd) {
  absl::MutexLock lock(&mu_);
  fds_.erase(fd);
}

void SocketRegistry::ShutdownAll() {
  absl::MutexLock lock(&mu_);
  shut_ = true;
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
}

Socket::Socket(int fd, SocketRegistry* registry)
    : fd_(fd), registry_(registry) {
  if (registry_ != nullptr) registry_->Add(fd_);
}

Socket::~Socket() {
  if (registry_ != nullptr) registry_->Remove(fd_);
  close(fd_);
}

absl::StatusOr<std::unique_ptr<Socket>> ConnectLoopback(
    int port, absl::Time deadline, SocketRegistry* registry) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
  }
  auto s = std::make_unique<Socket>(fd, registry);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      return absl::UnavailableError(absl::StrCat("connect: ", strerror(errno)));
    }
    if (absl::Status w = WaitFd(fd, POLLOUT, deadline); !w.ok()) return w;
    int error = 0;
    socklen_t len = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      return absl::UnavailableError(absl::StrCat("connect: ", strerror(error)));
    }
  }
  return s;
}

absl::Status SendAll(int fd, absl::string_view bytes, absl::Time deadline) {
  while (!bytes.empty()) {
    const ssize_t n =
        send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (absl::Status s = WaitFd(fd, POLLOUT, deadline); !s.ok()) return s;
      continue;
    }
    return absl::UnavailableError(absl::StrCat("send: ", strerror(errno)));
  }
  return absl::OkStatus();
}

std::string HeldState(int fd) {
  bool data = false;
  char buf[4096];
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      data = true;
      continue;
    }
    if (n == 0) return "closed by server";
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return "closed by server";
  }
  return data ? "open, server sent data" : "open";
}

absl::StatusOr<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(
    const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new failed");
  std::unique_ptr<TlsClientContext> c(new TlsClientContext(ctx));
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load CA file ", ca_file, ": ", SslReason()));
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // A server that closes without close_notify is a close, not an error.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  return c;
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::unique_ptr<TlsSocket>> TlsSocket::Connect(
    const TlsClientContext& context, int port, absl::Time deadline,
    SocketRegistry* registry) {
  absl::StatusOr<std::unique_ptr<Socket>> socket =
      ConnectLoopback(port, deadline, registry);
  if (!socket.ok()) return socket.status();
  SSL* ssl = SSL_new(context.get());
  if (ssl == nullptr) return absl::InternalError("SSL_new failed");
  const int fd = (*socket)->fd();
  std::unique_ptr<TlsSocket> t(new TlsSocket(*std::move(socket), ssl));
  SSL_set_fd(ssl, fd);
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
  absl::StatusOr<int> r =
      RunSsl(ssl, fd, deadline, [ssl] { return SSL_connect(ssl); });
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat("TLS handshake: ", r.status().message()));
  }
  if (*r == 0) return absl::UnavailableError("TLS handshake: closed");
  return t;
}

TlsSocket::~TlsSocket() { SSL_free(ssl_); }

absl::Status TlsSocket::Write(absl::string_view bytes, absl::Time deadline) {
  while (!bytes.empty()) {
    absl::StatusOr<int> r = RunSsl(ssl_, fd(), deadline, [&] {
      return SSL_write(
          ssl_, bytes.data(),
          static_cast<int>(std::min<size_t>(bytes.size(), 1 << 20)));
    });
    if (!r.ok()) return r.status();
    if (*r == 0) return absl::UnavailableError("closed by server");
    bytes.remove_prefix(static_cast<size_t>(*r));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> TlsSocket::Read(size_t max, absl::Time deadline) {
  std::string buf(max, '\0');
  absl::StatusOr<int> r = RunSsl(ssl_, fd(), deadline, [&] {
    return SSL_read(ssl_, buf.data(), static_cast<int>(max));
  });
  if (!r.ok()) return r.status();
  buf.resize(static_cast<size_t>(*r));
  return buf;
}

std::string TlsSocket::HeldState() {
  bool data = false;
  char buf[4096];
  while (true) {
    ERR_clear_error();
    const int r = SSL_read(ssl_, buf, sizeof(buf));
    if (r > 0) {
      data = true;
      continue;
    }
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
    ERR_clear_error();
    return "closed by server";
  }
  return data ? "open, server sent data" : "open";
}

absl::StatusOr<HttpAnswer> HttpsExchange(const TlsClientContext& context,
                                         int port, absl::string_view request,
                                         absl::Time deadline,
                                         SocketRegistry* registry) {
  absl::StatusOr<std::unique_ptr<TlsSocket>> tls =
      TlsSocket::Connect(context, port, deadline, registry);
  if (!tls.ok()) return tls.status();
  if (absl::Status s = (*tls)->Write(request, deadline); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("send: ", s.message()));
  }
  std::string in;
  size_t header_end = std::string::npos;
  int64_t content_length = -1;
  HttpAnswer answer;
  while (in.size() < kMaxAnswerBytes) {
    if (header_end != std::string::npos && content_length >= 0 &&
        in.size() >= header_end + 4 + static_cast<size_t>(content_length)) {
      break;
    }
    absl::StatusOr<std::string> got = (*tls)->Read(64 << 10, deadline);
    if (!got.ok()) {
      if (header_end != std::string::npos &&
          got.status().code() == absl::StatusCode::kUnavailable) {
        break;  // a reset after the answer
      }
      return got.status();
    }
    if (got->empty()) break;  // the server closed
    in += *got;
    if (header_end == std::string::npos) {
      header_end = in.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        for (absl::string_view line : absl::StrSplit(
                 absl::string_view(in).substr(0, header_end), "\r\n")) {
          if (absl::StartsWithIgnoreCase(line, "content-length:")) {
            (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(15)),
                                   &content_length);
          }
        }
      }
    }
  }
  const size_t eol = in.find("\r\n");
  if (in.empty() || eol == std::string::npos) {
    return absl::UnavailableError(in.empty() ? "closed without an answer"
                                             : "closed inside the answer");
  }
  answer.status_line = in.substr(0, eol);
  const std::vector<std::string> parts =
      absl::StrSplit(answer.status_line, absl::MaxSplits(' ', 2));
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &answer.status)) {
    return absl::UnavailableError(
        absl::StrCat("not an HTTP answer: ", answer.status_line.substr(0, 40)));
  }
  if (header_end != std::string::npos) {
    answer.body_bytes = static_cast<int64_t>(in.size() - header_end - 4);
  }
  return answer;
}

}  // namespace msgq::chaos
