#include "server/http/gnutls_credentials.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace msgq {
namespace {

// The longest certificate chain read from the certificate file.
constexpr unsigned kMaxChain = 16;

absl::Status Bad(absl::string_view what, const std::string& path,
                 absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("TLS ", what, " ", path, ": ", problem));
}

absl::StatusOr<std::string> Read(absl::string_view what,
                                 const std::string& path) {
  absl::StatusOr<std::string> text = auth::ReadWholeFile(path);
  if (!text.ok()) return Bad(what, path, text.status().message());
  return text;
}

gnutls_datum_t Datum(const std::string& text) {
  return gnutls_datum_t{
      reinterpret_cast<unsigned char*>(const_cast<char*>(text.data())),
      static_cast<unsigned>(text.size())};
}

// The DER of a public key (empty on error).
std::string Der(gnutls_pubkey_t key) {
  gnutls_datum_t out{nullptr, 0};
  if (gnutls_pubkey_export2(key, GNUTLS_X509_FMT_DER, &out) < 0) return "";
  std::string der(reinterpret_cast<char*>(out.data), out.size);
  gnutls_free(out.data);
  return der;
}

bool KeyMatches(gnutls_privkey_t key, const gnutls_pcert_st& leaf) {
  gnutls_pubkey_t pub;
  if (gnutls_pubkey_init(&pub) < 0) return false;
  bool same = false;
  if (gnutls_pubkey_import_privkey(pub, key, 0, 0) >= 0) {
    const std::string mine = Der(pub);
    same = !mine.empty() && mine == Der(leaf.pubkey);
  }
  gnutls_pubkey_deinit(pub);
  return same;
}

}  // namespace

GnutlsCredentials::Set::~Set() {
  for (gnutls_pcert_st& cert : chain_) gnutls_pcert_deinit(&cert);
  if (key_ != nullptr) gnutls_privkey_deinit(key_);
  if (client_ca_ != nullptr) gnutls_x509_trust_list_deinit(client_ca_, 1);
}

GnutlsCredentials::Stamps GnutlsCredentials::StatAll(
    const tls::TlsServerFiles& files) {
  // A missing file gets the empty stamp: it is "changed" once, then the
  // same until it appears.
  auto stamp = [](const std::string& path) {
    if (path.empty()) return auth::FileStamp{};
    return auth::StampOf(path).value_or(auth::FileStamp{});
  };
  return Stamps{stamp(files.cert), stamp(files.key), stamp(files.client_ca)};
}

absl::StatusOr<GnutlsCredentials::Loaded> GnutlsCredentials::Load(
    const tls::TlsServerFiles& files) {
  const Stamps stamps = StatAll(files);
  std::shared_ptr<Set> set(new Set());

  absl::StatusOr<std::string> cert_text = Read("certificate", files.cert);
  if (!cert_text.ok()) return cert_text.status();
  {
    std::vector<gnutls_pcert_st> chain(kMaxChain);
    unsigned n = kMaxChain;
    const gnutls_datum_t data = Datum(*cert_text);
    const int rc = gnutls_pcert_list_import_x509_raw(
        chain.data(), &n, &data, GNUTLS_X509_FMT_PEM,
        GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    if (rc == GNUTLS_E_SHORT_MEMORY_BUFFER) {
      return Bad("certificate", files.cert,
                 absl::StrCat("holds more than ", kMaxChain, " certificates"));
    }
    if (rc < 0 || n == 0) {
      return Bad("certificate", files.cert, "holds no PEM certificate");
    }
    chain.resize(n);
    set->chain_ = std::move(chain);
  }

  absl::StatusOr<std::string> key_text =
      auth::ReadSecretFile("TLS key", files.key, auth::SecretAccess::kRead);
  if (!key_text.ok()) return key_text.status();
  if (gnutls_privkey_init(&set->key_) < 0) {
    set->key_ = nullptr;
    return absl::InternalError("gnutls_privkey_init failed");
  }
  const gnutls_datum_t key_data = Datum(*key_text);
  // No password: an encrypted key does not import.
  if (gnutls_privkey_import_x509_raw(set->key_, &key_data, GNUTLS_X509_FMT_PEM,
                                     nullptr, GNUTLS_PKCS_PLAIN) < 0) {
    return Bad("key", files.key, "holds no unencrypted PEM private key");
  }
  if (!KeyMatches(set->key_, set->chain_[0])) {
    return Bad(
        "key", files.key,
        absl::StrCat("is not the key of the certificate in ", files.cert));
  }

  if (!files.client_ca.empty()) {
    absl::StatusOr<std::string> ca_text = Read("client CA", files.client_ca);
    if (!ca_text.ok()) return ca_text.status();
    if (gnutls_x509_trust_list_init(&set->client_ca_, 0) < 0) {
      set->client_ca_ = nullptr;
      return absl::InternalError("gnutls_x509_trust_list_init failed");
    }
    const gnutls_datum_t ca_data = Datum(*ca_text);
    if (gnutls_x509_trust_list_add_trust_mem(set->client_ca_, &ca_data, nullptr,
                                             GNUTLS_X509_FMT_PEM, 0, 0) <= 0) {
      return Bad("client CA", files.client_ca, "holds no PEM certificate");
    }
  }
  return Loaded{std::move(set), stamps};
}

absl::StatusOr<std::unique_ptr<GnutlsCredentials>> GnutlsCredentials::Create(
    tls::TlsServerFiles files, Options options) {
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate and a key file");
  }
  if (files.reload_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("TLS reload interval is negative");
  }
  absl::StatusOr<Loaded> loaded = Load(files);
  if (!loaded.ok()) return loaded.status();
  return std::unique_ptr<GnutlsCredentials>(
      new GnutlsCredentials(std::move(files), options, *std::move(loaded)));
}

GnutlsCredentials::GnutlsCredentials(tls::TlsServerFiles files, Options options,
                                     Loaded loaded)
    : files_(std::move(files)),
      options_(options),
      current_(std::move(loaded.set)),
      seen_(loaded.stamps),
      next_check_(options_.clock->MonotonicNow() + files_.reload_interval) {}

std::shared_ptr<const GnutlsCredentials::Set> GnutlsCredentials::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (checking_ || options_.clock->MonotonicNow() < next_check_) {
      return current_;
    }
  }
  // A failure was logged by ReloadNow; the current set stays.
  ReloadNow().IgnoreError();
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::Status GnutlsCredentials::ReloadNow() {
  Stamps seen;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* checking) { return !*checking; }, &checking_));
    checking_ = true;
    seen = seen_;
  }
  absl::Status result;
  const Stamps now = StatAll(files_);
  std::optional<Loaded> loaded;
  if (!(now == seen)) {
    absl::StatusOr<Loaded> attempt = Load(files_);
    if (attempt.ok()) {
      loaded = *std::move(attempt);
    } else {
      result = attempt.status();
      LogWarning(result.message(),
                 "; the HTTPS port keeps the previous certificate until the "
                 "files change again");
    }
  }
  std::shared_ptr<const Set> replaced;  // freed once the lock is released
  {
    absl::MutexLock lock(&mu_);
    checking_ = false;
    next_check_ = options_.clock->MonotonicNow() + files_.reload_interval;
    seen_ = now;
    if (loaded.has_value()) {
      // The stamps taken before reading: a change during the read shows up
      // as a change at the next check.
      seen_ = loaded->stamps;
      replaced = std::move(current_);
      current_ = std::move(loaded->set);
      ++reloads_;
    }
  }
  if (loaded.has_value()) {
    LogInfo("HTTPS: loaded the new certificate from ", files_.cert);
  }
  return result;
}

absl::Status GnutlsCredentials::VerifyClient(const Set& set,
                                             gnutls_session_t session) {
  if (set.client_ca() == nullptr) return absl::OkStatus();
  unsigned n = 0;
  const gnutls_datum_t* der = gnutls_certificate_get_peers(session, &n);
  if (der == nullptr || n == 0) {
    return absl::PermissionDeniedError("peer did not return a certificate");
  }
  std::vector<gnutls_x509_crt_t> chain;
  chain.reserve(n);
  absl::Status result;
  for (unsigned i = 0; i < n && i < kMaxChain; ++i) {
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0) {
      result = absl::InternalError("gnutls_x509_crt_init failed");
      break;
    }
    chain.push_back(crt);
    if (gnutls_x509_crt_import(crt, &der[i], GNUTLS_X509_FMT_DER) < 0) {
      result = absl::PermissionDeniedError(
          "certificate verify failed: the client certificate does not parse");
      break;
    }
  }
  if (result.ok()) {
    // The client certificate must be fit for TLS client authentication
    // (one without an extended key usage is).
    gnutls_typed_vdata_st purpose{};
    purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
    purpose.data = reinterpret_cast<unsigned char*>(
        const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT));
    unsigned status = 0;
    const int rc = gnutls_x509_trust_list_verify_crt2(
        set.client_ca(), chain.data(), static_cast<unsigned>(chain.size()),
        &purpose, 1, 0, &status, nullptr);
    if (rc < 0) {
      result = absl::PermissionDeniedError(
          absl::StrCat("certificate verify failed: ", gnutls_strerror(rc)));
    } else if (status != 0) {
      gnutls_datum_t text{nullptr, 0};
      std::string reason = "untrusted";
      if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509,
                                                       &text, 0) >= 0) {
        reason.assign(reinterpret_cast<char*>(text.data), text.size);
        gnutls_free(text.data);
      }
      result = absl::PermissionDeniedError(absl::StrCat(
          "certificate verify failed: ", absl::StripAsciiWhitespace(reason)));
    }
  }
  for (gnutls_x509_crt_t crt : chain) gnutls_x509_crt_deinit(crt);
  return result;
}

int GnutlsCredentials::reloads() const {
  absl::MutexLock lock(&mu_);
  return reloads_;
}

}  // namespace msgq
