#include "server/tls/tls_server_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace msgq::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

std::unique_ptr<BIO, BioFree> MemBio(const std::string& text) {
  return std::unique_ptr<BIO, BioFree>(
      BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

absl::Status Bad(absl::string_view what, const std::string& path,
                 absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("TLS ", what, " ", path, ": ", problem));
}

// The certificates of a PEM text, in order (none: empty).
std::vector<X509Ptr> ReadCertificates(const std::string& text) {
  std::vector<X509Ptr> out;
  auto bio = MemBio(text);
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    out.emplace_back(x);
  }
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

absl::StatusOr<std::string> Read(absl::string_view what,
                                 const std::string& path) {
  absl::StatusOr<std::string> text = auth::ReadWholeFile(path);
  if (!text.ok()) return Bad(what, path, text.status().message());
  return text;
}

absl::StatusOr<SslCtxPtr> BuildContext(const TlsServerFiles& files) {
  absl::StatusOr<std::string> cert_text = Read("certificate", files.cert);
  if (!cert_text.ok()) return cert_text.status();
  std::vector<X509Ptr> chain = ReadCertificates(*cert_text);
  if (chain.empty()) {
    return Bad("certificate", files.cert, "holds no PEM certificate");
  }
  absl::StatusOr<std::string> key_text =
      auth::ReadSecretFile("TLS key", files.key, auth::SecretAccess::kRead);
  if (!key_text.ok()) return key_text.status();
  auto key_bio = MemBio(*key_text);
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return Bad("key", files.key, "holds no unencrypted PEM private key");
  }
  if (X509_check_private_key(chain[0].get(), key.get()) != 1) {
    ERR_clear_error();
    return Bad(
        "key", files.key,
        absl::StrCat("is not the key of the certificate in ", files.cert));
  }
  std::vector<X509Ptr> cas;
  if (!files.client_ca.empty()) {
    absl::StatusOr<std::string> ca_text = Read("client CA", files.client_ca);
    if (!ca_text.ok()) return ca_text.status();
    cas = ReadCertificates(*ca_text);
    if (cas.empty()) {
      return Bad("client CA", files.client_ca, "holds no PEM certificate");
    }
  }

  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // TLS 1.2: forward secrecy and AEAD only, as gRPC's port and the HTTP
  // port (GnuTLS) agree; TLS 1.3's suites are all AEAD.
  if (SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) {
    return absl::InternalError("SSL_CTX_set_cipher_list failed");
  }
  SSL_CTX_set_options(
      ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE |
                                  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  bool ok = SSL_CTX_use_certificate(ctx.get(), chain[0].get()) == 1 &&
            SSL_CTX_use_PrivateKey(ctx.get(), key.get()) == 1;
  for (size_t i = 1; ok && i < chain.size(); ++i) {
    ok = SSL_CTX_add1_chain_cert(ctx.get(), chain[i].get()) == 1;
  }
  if (ok && !cas.empty()) {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    for (const X509Ptr& ca : cas) {
      ok = ok && X509_STORE_add_cert(store, ca.get()) == 1 &&
           SSL_CTX_add_client_CA(ctx.get(), ca.get()) == 1;
    }
    SSL_CTX_set_verify(
        ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Resumed sessions need an id context when clients are verified.
    static const unsigned char kId[] = "msgqd";
    ok = ok &&
         SSL_CTX_set_session_id_context(ctx.get(), kId, sizeof(kId) - 1) == 1;
  }
  if (!ok) {
    char text[256];
    ERR_error_string_n(ERR_get_error(), text, sizeof(text));
    ERR_clear_error();
    return Bad("certificate", files.cert, text);
  }
  return ctx;
}

SslCtxPtr UpRef(SSL_CTX* ctx) {
  SSL_CTX_up_ref(ctx);
  return SslCtxPtr(ctx);
}

}  // namespace

absl::StatusOr<TlsServerContext::Stamps> TlsServerContext::StatAll(
    const TlsServerFiles& files) {
  // A missing file gets the empty stamp: it is "changed" once, then the
  // same until it appears.
  auto stamp = [](const std::string& path) {
    if (path.empty()) return auth::FileStamp{};
    return auth::StampOf(path).value_or(auth::FileStamp{});
  };
  return Stamps{stamp(files.cert), stamp(files.key), stamp(files.client_ca)};
}

// Selects "h2" when the client offers it; no ALPN otherwise.
static int SelectH2(SSL*, const unsigned char** out, unsigned char* outlen,
                    const unsigned char* in, unsigned int inlen, void*) {
  static constexpr unsigned char kH2[] = {2, 'h', '2'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kH2, sizeof(kH2), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

absl::StatusOr<TlsServerContext::Loaded> TlsServerContext::Load(
    const TlsServerFiles& files, const Options& options) {
  absl::StatusOr<Stamps> stamps = StatAll(files);
  if (!stamps.ok()) return stamps.status();
  absl::StatusOr<SslCtxPtr> ctx = BuildContext(files);
  if (!ctx.ok()) return ctx.status();
  if (options.alpn_h2)
    SSL_CTX_set_alpn_select_cb(ctx->get(), SelectH2, nullptr);
  return Loaded{*std::move(ctx), *stamps};
}

absl::StatusOr<std::unique_ptr<TlsServerContext>> TlsServerContext::Create(
    TlsServerFiles files, Options options) {
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate and a key file");
  }
  if (files.reload_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("TLS reload interval is negative");
  }
  absl::StatusOr<Loaded> loaded = Load(files, options);
  if (!loaded.ok()) return loaded.status();
  return std::unique_ptr<TlsServerContext>(
      new TlsServerContext(std::move(files), options, *std::move(loaded)));
}

TlsServerContext::TlsServerContext(TlsServerFiles files, Options options,
                                   Loaded loaded)
    : files_(std::move(files)),
      options_(options),
      current_(std::move(loaded.ctx)),
      seen_(loaded.stamps),
      next_check_(options_.clock->MonotonicNow() + files_.reload_interval) {}

SslCtxPtr TlsServerContext::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (checking_ || options_.clock->MonotonicNow() < next_check_) {
      return UpRef(current_.get());
    }
  }
  // A failure was logged by ReloadNow; the current context stays.
  ReloadNow().IgnoreError();
  absl::MutexLock lock(&mu_);
  return UpRef(current_.get());
}

absl::Status TlsServerContext::ReloadNow() {
  Stamps seen;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* checking) { return !*checking; }, &checking_));
    checking_ = true;
    seen = seen_;
  }
  absl::Status result;
  absl::StatusOr<Stamps> now = StatAll(files_);
  std::optional<Loaded> loaded;
  if (now.ok() && !(*now == seen)) {
    absl::StatusOr<Loaded> attempt = Load(files_, options_);
    if (attempt.ok()) {
      loaded = *std::move(attempt);
    } else {
      result = attempt.status();
      LogWarning(result.message(),
                 "; keeping the previous TLS certificate until the files "
                 "change again");
    }
  }
  {
    absl::MutexLock lock(&mu_);
    checking_ = false;
    next_check_ = options_.clock->MonotonicNow() + files_.reload_interval;
    if (now.ok()) seen_ = *now;
    if (loaded.has_value()) {
      // The stamps taken before reading: a change during the read shows up
      // as a change at the next check.
      seen_ = loaded->stamps;
      current_ = std::move(loaded->ctx);
      ++reloads_;
    }
  }
  // Logged once the lock is released.
  if (loaded.has_value()) {
    LogInfo("TLS: loaded the new certificate from ", files_.cert);
  }
  return result;
}

int TlsServerContext::reloads() const {
  absl::MutexLock lock(&mu_);
  return reloads_;
}

}  // namespace msgq::tls
