#include "client/cli_tls_diagnosis.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/host_port.h"

namespace msgq {
namespace {

// What one TLS handshake with the server showed.
struct Probe {
  bool tls = false;                // the server answered with a TLS ServerHello
  bool asked_cert = false;         // it asked for a client certificate
  std::vector<std::string> names;  // its certificate's subjectAltNames
};

// A TCP connection to `host`:`port` with 3 s send and receive timeouts;
// -1 when none could be made.
int Connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found) !=
      0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{.tv_sec = 3, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  return fd;
}

std::vector<std::string> SubjectAltNames(X509* cert) {
  std::vector<std::string> names;
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
    if (n->type == GEN_DNS) {
      const ASN1_STRING* s = n->d.dNSName;
      names.push_back(absl::StrCat(
          "DNS:",
          std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                      ASN1_STRING_length(s))));
    } else if (n->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = n->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {0};
      const int family = ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(s), text, sizeof(text))) {
        names.push_back(absl::StrCat("IP:", text));
      }
    }
  }
  GENERAL_NAMES_free(sans);
  return names;
}

std::optional<Probe> ProbeTls(const std::string& host, int port,
                              const ChannelSecurity& security) {
  const int fd = Connect(host, port);
  if (fd < 0) return std::nullopt;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(
      SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (ctx == nullptr) {
    close(fd);
    return std::nullopt;
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (!security.tls_cert_file.empty() && !security.tls_key_file.empty()) {
    SSL_CTX_use_certificate_chain_file(ctx.get(),
                                       security.tls_cert_file.c_str());
    SSL_CTX_use_PrivateKey_file(ctx.get(), security.tls_key_file.c_str(),
                                SSL_FILETYPE_PEM);
  }
  Probe probe;
  // Called when the server sends a CertificateRequest.
  SSL_CTX_set_cert_cb(
      ctx.get(),
      [](SSL*, void* arg) {
        static_cast<Probe*>(arg)->asked_cert = true;
        return 1;
      },
      &probe);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  if (ssl == nullptr) {
    close(fd);
    return std::nullopt;
  }
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_set_alpn_protos(ssl.get(), kAlpn, sizeof(kAlpn));
  SSL_set_fd(ssl.get(), fd);
  SSL_connect(ssl.get());
  if (X509* cert = SSL_get1_peer_certificate(ssl.get()); cert != nullptr) {
    probe.tls = true;
    probe.names = SubjectAltNames(cert);
    X509_free(cert);
  }
  ERR_clear_error();
  close(fd);
  return probe;
}

}  // namespace

std::string DiagnoseTlsFailure(const std::string& server,
                               const ChannelSecurity& security,
                               absl::string_view grpc_message) {
  // Only a failed connection; an answer of msgqd's own says its reason.
  bool connection = false;
  for (absl::string_view failed :
       {"failed to connect", "Socket closed", "handshake", "Peer name"}) {
    connection |= absl::StrContains(grpc_message, failed);
  }
  if (!connection) return "";
  for (absl::string_view settled :
       {"Connection refused", "DNS resolution failed", "Deadline Exceeded",
        "No route to host"}) {
    if (absl::StrContains(grpc_message, settled)) return "";
  }
  absl::StatusOr<HostPort> hp = ParseHostPort(server);
  if (!hp.ok() || !hp->port.has_value() || hp->host.empty()) return "";
  std::optional<Probe> probe = ProbeTls(hp->host, *hp->port, security);
  if (!probe.has_value()) return "";
  const bool tls = !security.tls_ca_file.empty();
  if (!tls) {
    if (!probe->tls) return "";
    return probe->asked_cert
               ? "the server speaks TLS and asks for a client certificate: "
                 "give --tls_ca, --tls_cert and --tls_key"
               : "the server speaks TLS: give --tls_ca (the CA that signed "
                 "its certificate)";
  }
  if (!probe->tls) {
    return "the server does not speak TLS: leave out --tls_ca, --tls_cert "
           "and --tls_key (or it is not msgqd)";
  }
  const std::string peer_name_prefix = "Peer name ";
  if (const size_t at = grpc_message.find(peer_name_prefix);
      at != absl::string_view::npos &&
      absl::StrContains(grpc_message, "is not in peer certificate")) {
    absl::string_view rest = grpc_message.substr(at + peer_name_prefix.size());
    const std::string name(rest.substr(0, rest.find(' ')));
    return absl::StrCat(
        "the server's certificate names ",
        probe->names.empty() ? "no subjectAltName"
                             : absl::StrJoin(probe->names, ", "),
        ", not ", name,
        ": dial one of those or give --tls_server_name=NAME with one of them");
  }
  if (probe->asked_cert && security.tls_cert_file.empty()) {
    return "the server asks for a client certificate (mTLS) and none was "
           "sent: give --tls_cert and --tls_key";
  }
  return "";
}

}  // namespace msgq
