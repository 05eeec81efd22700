#include "server/tls/tls_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/poll_timeout.h"

namespace msgq::tls {
namespace {

// Why the last OpenSSL call failed, from its error queue (cleared).
std::string OpenSslReason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "connection closed or reset";
  const char* reason = ERR_reason_error_string(e);
  return reason != nullptr ? reason : absl::StrCat("OpenSSL error ", e);
}

// What gRPC's peer identity holds for a subjectAltName that is not a DNS
// name, email, URI or IP address.
constexpr char kOtherSan[] = "other types of SAN";

// An ASN.1 string as UTF-8; nullopt when it cannot be converted.
std::optional<std::string> Utf8(const ASN1_STRING* data) {
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return std::nullopt;
  std::string text(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsConnection>> TlsConnection::Accept(
    int fd, SslCtxPtr ctx, absl::Time deadline) {
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  SSL* ssl = SSL_new(ctx.get());
  if (ssl == nullptr) {
    close(fd);
    return absl::InternalError("SSL_new failed");
  }
  // From here the connection owns fd and ssl (closed by its destructor).
  std::unique_ptr<TlsConnection> conn(new TlsConnection(fd, ssl));
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      SSL_set_fd(ssl, fd) != 1) {
    return absl::UnavailableError("not a socket that TLS can use");
  }
  SSL_set_accept_state(ssl);
  while (true) {
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl);
    if (r == 1) return conn;
    const int error = SSL_get_error(ssl, r);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      if (!conn->Wait(error == SSL_ERROR_WANT_WRITE, deadline)) {
        return absl::DeadlineExceededError(
            "TLS handshake not finished in time");
      }
      continue;
    }
    std::string reason = OpenSslReason();
    if (error == SSL_ERROR_SSL && SSL_get_verify_result(ssl) != X509_V_OK) {
      reason = absl::StrCat(
          reason, ": ",
          X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
    }
    conn->closed_ = true;
    return absl::UnavailableError(
        absl::StrCat("TLS handshake failed: ", reason));
  }
}

TlsConnection::~TlsConnection() {
  SSL_free(ssl_);
  close(fd_);
}

bool TlsConnection::Wait(bool want_write, absl::Time deadline) const {
  pollfd p{fd_, static_cast<short>(want_write ? POLLOUT : POLLIN), 0};
  while (true) {
    const int r = poll(&p, 1, PollTimeoutMs(deadline));
    if (r > 0) return true;  // ready, or an error the next call reports
    if (r == 0) return false;
    if (errno != EINTR) return true;
  }
}

absl::StatusOr<size_t> TlsConnection::Read(char* buf, size_t size,
                                           absl::Time deadline) {
  if (closed_) return 0;
  while (true) {
    size_t got = 0;
    ERR_clear_error();
    if (SSL_read_ex(ssl_, buf, size, &got) == 1) return got;
    const int error = SSL_get_error(ssl_, 0);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      if (!Wait(error == SSL_ERROR_WANT_WRITE, deadline)) {
        return absl::DeadlineExceededError("no TLS data in time");
      }
      continue;
    }
    closed_ = true;
    if (error == SSL_ERROR_ZERO_RETURN) return 0;
    // A peer that closes its socket without close_notify: the end too
    // (HTTP/1.0-style clients do it); a broken record is an error.
    if (error == SSL_ERROR_SYSCALL || ERR_peek_error() == 0 ||
        ERR_GET_REASON(ERR_peek_error()) ==
            SSL_R_UNEXPECTED_EOF_WHILE_READING) {
      ERR_clear_error();
      return 0;
    }
    return absl::UnavailableError(
        absl::StrCat("TLS read failed: ", OpenSslReason()));
  }
}

absl::Status TlsConnection::WriteAll(absl::string_view data,
                                     absl::Time deadline) {
  if (closed_) return absl::UnavailableError("TLS connection closed");
  while (!data.empty()) {
    size_t put = 0;
    ERR_clear_error();
    if (SSL_write_ex(ssl_, data.data(), data.size(), &put) == 1) {
      data.remove_prefix(put);
      continue;
    }
    const int error = SSL_get_error(ssl_, 0);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      if (!Wait(error == SSL_ERROR_WANT_WRITE, deadline)) {
        return absl::DeadlineExceededError("TLS peer did not read in time");
      }
      continue;
    }
    closed_ = true;
    return absl::UnavailableError(
        absl::StrCat("TLS write failed: ", OpenSslReason()));
  }
  return absl::OkStatus();
}

bool TlsConnection::HasBufferedData() const {
  return SSL_has_pending(ssl_) == 1;
}

std::vector<std::string> TlsConnection::PeerIdentities() const {
  return tls::PeerIdentities(ssl_);
}

std::vector<std::string> PeerIdentities(const SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return {};
  std::vector<std::string> names;
  GENERAL_NAMES* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  const int count = sans != nullptr ? sk_GENERAL_NAME_num(sans) : 0;
  bool broken = false;
  for (int i = 0; i < count && !broken; ++i) {
    const GENERAL_NAME* san = sk_GENERAL_NAME_value(sans, i);
    switch (san->type) {
      case GEN_DNS:
      case GEN_EMAIL:
      case GEN_URI: {
        std::optional<std::string> text =
            Utf8(san->type == GEN_DNS     ? san->d.dNSName
                 : san->type == GEN_EMAIL ? san->d.rfc822Name
                                          : san->d.uniformResourceIdentifier);
        if (!text.has_value()) {
          broken = true;
        } else if (!text->empty()) {
          names.push_back(*std::move(text));
        }
        break;
      }
      case GEN_IPADD: {
        const ASN1_OCTET_STRING* ip = san->d.iPAddress;
        const int length = ASN1_STRING_length(ip);
        char buf[INET6_ADDRSTRLEN];
        if ((length != 4 && length != 16) ||
            inet_ntop(length == 4 ? AF_INET : AF_INET6,
                      ASN1_STRING_get0_data(ip), buf, sizeof(buf)) == nullptr) {
          broken = true;
        } else {
          names.emplace_back(buf);
        }
        break;
      }
      default:
        names.emplace_back(kOtherSan);
        break;
    }
  }
  if (sans != nullptr) GENERAL_NAMES_free(sans);
  if (broken) return {};
  if (count > 0) return names;
  X509_NAME* subject = X509_get_subject_name(cert);
  const int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (i < 0) return {};
  std::optional<std::string> cn =
      Utf8(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i)));
  if (!cn.has_value() || cn->empty()) return {};
  return {*std::move(cn)};
}

std::string TlsConnection::Version() const { return SSL_get_version(ssl_); }

void TlsConnection::Shutdown(absl::Time deadline) {
  if (closed_) return;
  closed_ = true;
  while (true) {
    ERR_clear_error();
    const int r = SSL_shutdown(ssl_);
    if (r >= 0) break;  // sent (we do not wait for the peer's)
    const int error = SSL_get_error(ssl_, r);
    if (error != SSL_ERROR_WANT_WRITE || !Wait(true, deadline)) break;
  }
  ERR_clear_error();
}

}  // namespace msgq::tls
