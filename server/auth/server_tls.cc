#include "server/auth/server_tls.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace msgq::auth {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

absl::Status Bad(absl::string_view flag, absl::string_view path,
                 absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", path, ": ", what));
}

absl::StatusOr<File> Open(absl::string_view flag, const std::string& path) {
  File f(fopen(path.c_str(), "r"));
  if (f == nullptr) return Bad(flag, path, "cannot be read");
  return f;
}

}  // namespace

absl::Status CheckTlsFiles(const TlsFiles& files) {
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key go together: give both or neither");
  }
  if (files.cert.empty()) {
    if (!files.client_ca.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs --tls_cert and --tls_key");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<File> cert_file = Open("tls_cert", files.cert);
  if (!cert_file.ok()) return cert_file.status();
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_X509(cert_file->get(), nullptr, nullptr, nullptr), &X509_free);
  if (cert == nullptr) {
    return Bad("tls_cert", files.cert, "holds no PEM certificate");
  }
  absl::StatusOr<File> key_file = Open("tls_key", files.key);
  if (!key_file.ok()) return key_file.status();
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_PrivateKey(key_file->get(), nullptr, nullptr, nullptr),
      &EVP_PKEY_free);
  if (key == nullptr) {
    return Bad("tls_key", files.key, "holds no unencrypted PEM private key");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return Bad(
        "tls_key", files.key,
        absl::StrCat("is not the key of the certificate in ", files.cert));
  }
  if (!files.client_ca.empty()) {
    absl::StatusOr<File> ca_file = Open("tls_client_ca", files.client_ca);
    if (!ca_file.ok()) return ca_file.status();
    std::unique_ptr<X509, decltype(&X509_free)> ca(
        PEM_read_X509(ca_file->get(), nullptr, nullptr, nullptr), &X509_free);
    if (ca == nullptr) {
      return Bad("tls_client_ca", files.client_ca, "holds no PEM certificate");
    }
  }
  return absl::OkStatus();
}

}  // namespace msgq::auth
