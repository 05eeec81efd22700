// Test helpers of server/tls: throwaway certificates made with the openssl
// CLI and a blocking OpenSSL client over one end of a socketpair.
#ifndef MSGQ_SERVER_TLS_TLS_TEST_UTIL_H_
#define MSGQ_SERVER_TLS_TLS_TEST_UTIL_H_

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace msgq::tls::testing {

// A new empty directory under $TEST_TMPDIR (or /tmp).
inline std::string MakeTempDir() {
  const char* base = getenv("TEST_TMPDIR");
  std::string templ =
      absl::StrCat(base != nullptr ? base : "/tmp", "/msgq_tls_XXXXXX");
  return mkdtemp(templ.data()) != nullptr ? templ : "";
}

// Removes what MakeTempDir made, with everything in it ("" is a no-op).
inline void RemoveTempDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

// In `dir`: ca.pem (CN msgq-test-ca) signing server1 (CN msgqd-1), server2
// (CN msgqd-2; both for IP 127.0.0.1 and localhost) and client "reader";
// other.pem, an unrelated CA, signing client "intruder". Each NAME.pem has
// NAME.key (P-256 keys: quick to make).
inline bool MakeCertificates(const std::string& dir) {
  std::ofstream(dir + "/san.ext")
      << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1";
  std::string cmd = absl::StrCat(
      "cd ", dir, " && openssl req -x509 ", ec,
      " -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=msgq-test-ca",
      " && openssl req -x509 ", ec,
      " -nodes -keyout other.key -out other.pem -days 2 -subj "
      "/CN=msgq-other-ca");
  auto sign = [&](const std::string& name, const std::string& ca,
                  const std::string& cn, bool server) {
    absl::StrAppend(&cmd, " && openssl req ", ec, " -nodes -keyout ", name,
                    ".key -out ", name, ".csr -subj /CN=", cn,
                    " && openssl x509 -req -in ", name, ".csr -CA ", ca,
                    ".pem -CAkey ", ca, ".key -CAcreateserial -out ", name,
                    ".pem -days 2", server ? " -extfile san.ext" : "");
  };
  sign("server1", "ca", "msgqd-1", true);
  sign("server2", "ca", "msgqd-2", true);
  sign("reader", "ca", "reader", false);
  sign("intruder", "other", "intruder", false);
  return system(
             absl::StrCat("(", cmd, ") >", dir, "/openssl.log 2>&1").c_str()) ==
         0;
}

// Replaces `to` with a copy of `from` atomically (a new file renamed over
// it), of mode 0600 as a key must be.
inline void CopyFile(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream(to + ".tmp", std::ios::binary) << in.rdbuf();
  chmod((to + ".tmp").c_str(), 0600);
  std::rename((to + ".tmp").c_str(), to.c_str());
}

// A blocking TLS client on `fd` (owned) trusting `dir`/`ca`.pem and, unless
// `client` is empty, presenting `dir`/`client`.pem.
class TestClient {
 public:
  TestClient(int fd, const std::string& dir, const std::string& ca,
             const std::string& client = "", int max_version = 0)
      : fd_(fd) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, (dir + "/" + ca + ".pem").c_str(),
                                  nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (max_version != 0) {
      SSL_CTX_set_min_proto_version(ctx_, 0);
      SSL_CTX_set_max_proto_version(ctx_, max_version);
      SSL_CTX_set_security_level(ctx_, 0);
    }
    if (!client.empty()) {
      SSL_CTX_use_certificate_chain_file(ctx_,
                                         (dir + "/" + client + ".pem").c_str());
      SSL_CTX_use_PrivateKey_file(ctx_, (dir + "/" + client + ".key").c_str(),
                                  SSL_FILETYPE_PEM);
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
  }
  ~TestClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    close(fd_);
  }
  // True when the handshake (and, with TLS 1.3, the server's verdict on
  // our certificate, which comes with the first read) succeeded.
  bool Connect() { return SSL_connect(ssl_) == 1; }
  bool Write(const std::string& data) {
    return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) ==
           static_cast<int>(data.size());
  }
  // Up to `max` bytes; empty at the end or on an error.
  std::string Read(int max = 4096) {
    std::string out(static_cast<size_t>(max), '\0');
    const int n = SSL_read(ssl_, out.data(), max);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }
  void Shutdown() { SSL_shutdown(ssl_); }
  // The CN of the server's certificate.
  std::string ServerCommonName() const {
    X509* cert = SSL_get0_peer_certificate(ssl_);
    if (cert == nullptr) return "";
    char cn[256] = {0};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn,
                              sizeof(cn));
    return cn;
  }

 private:
  const int fd_;
  SSL_CTX* ctx_;
  SSL* ssl_;
};

}  // namespace msgq::tls::testing

#endif  // MSGQ_SERVER_TLS_TLS_TEST_UTIL_H_
