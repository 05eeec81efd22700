// TlsServerContext: the OpenSSL server side of msgqd's own TLS sockets (the
// MySQL-protocol port; the HTTP port does TLS with GnuTLS from the same
// files, server/http/gnutls_credentials.h), built from PEM files and re-read
// when they change (certificate rotation without restart).
//
// Acquire() hands out the current SSL_CTX for a new connection (a counted
// reference: the connection keeps its context even after a rotation).
// At most once per `reload_interval` (monotonic clock), the next Acquire()
// stats the three files; when one changed (modification time, size, inode
// or permission bits) it reads them and builds a new context. A new set
// that does not load (unreadable, not PEM, a key that does not match the
// certificate, a key that group or others may read) is logged once per
// change and the previous context stays in force. Replace
// the files atomically (write new files, rename them over the old ones):
// between a new certificate and its key the pair does not match and the
// old pair is kept until it does.
//
// The contexts speak TLS 1.2 and 1.3 only, and in TLS 1.2 only the suites
// of kTls12Ciphers (ECDHE with AES-GCM: gRPC's default list, which the
// gRPC port uses). With a client CA they require
// and verify a client certificate signed by it (mTLS); TlsConnection then
// reports the peer's identity.
//
// Example:
//   auto ctx = tls::TlsServerContext::Create(
//       {.cert = "/etc/msgq/server.pem", .key = "/etc/msgq/server.key"});
//   if (!ctx.ok()) return ctx.status();
//   auto conn = tls::TlsConnection::Accept(fd, (*ctx)->Acquire(),
//                                          absl::Now() + absl::Seconds(10));
//
// Thread-safety: thread-safe. Acquire() may be called from any thread; the
// files are read without holding the lock, by one caller at a time (the
// others keep getting the current context meanwhile).
#ifndef MSGQ_SERVER_TLS_TLS_SERVER_CONTEXT_H_
#define MSGQ_SERVER_TLS_TLS_SERVER_CONTEXT_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/auth/watched_file.h"

namespace msgq::tls {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
// One counted reference to an SSL_CTX (SSL_CTX_up_ref when handed out).
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// The files of a TLS server and how often they are checked for changes.
struct TlsServerFiles {
  std::string cert;       // PEM certificate chain, leaf first
  std::string key;        // PEM private key of the leaf, unencrypted
  std::string client_ca;  // PEM CA bundle; non-empty: require client certs
  absl::Duration reload_interval = absl::Seconds(60);
};

// The TLS 1.2 cipher suites of every TLS port of msgqd (OpenSSL names).
inline constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384";

class TlsServerContext {
 public:
  struct Options {
    // Reads MonotonicNow() for the reload interval; must outlive the object.
    Clock* clock = RealClock::Get();
    // Select ALPN "h2" when the client offers it (the gRPC port; gRPC
    // clients require it). Without it no protocol is selected.
    bool alpn_h2 = false;
  };

  // Loads the files now. INVALID_ARGUMENT naming the file and the problem:
  // "TLS certificate PATH: cannot read PATH: No such file or directory",
  // "... holds no PEM certificate", "TLS key PATH: holds no unencrypted PEM
  // private key", "TLS key PATH: is not the key of the certificate in
  // CERT", "TLS client CA PATH: holds no PEM certificate"; also when cert or
  // key is empty or the reload interval is negative. FAILED_PRECONDITION
  // "TLS key PATH: mode 0644 lets group or others read it; chmod 600 it"
  // when group or others may read the key.
  static absl::StatusOr<std::unique_ptr<TlsServerContext>> Create(
      TlsServerFiles files, Options options);
  static absl::StatusOr<std::unique_ptr<TlsServerContext>> Create(
      TlsServerFiles files) {
    return Create(std::move(files), Options());
  }
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  // The context for a new connection; first re-reads the files when the
  // reload interval passed since the last check and one of them changed.
  // Never null.
  SslCtxPtr Acquire();

  // Checks the files now, whatever the interval: OK when they are
  // unchanged or were loaded; the load error (as from Create) when they
  // changed and do not load, in which case the previous context stays.
  // The error of a given change is returned (and logged) once; later calls
  // return OK until the files change again.
  absl::Status ReloadNow();

  // True when clients must present a certificate (a client CA was given).
  bool requires_client_certificate() const { return !files_.client_ca.empty(); }
  const TlsServerFiles& files() const { return files_; }
  // How many times a changed set of files was loaded since Create.
  int reloads() const;

 private:
  struct Stamps {
    auth::FileStamp cert, key, client_ca;
    bool operator==(const Stamps&) const = default;
  };
  struct Loaded {
    SslCtxPtr ctx;
    Stamps stamps;
  };

  TlsServerContext(TlsServerFiles files, Options options, Loaded loaded);
  // Stats and reads the files and builds a context (no lock held).
  static absl::StatusOr<Loaded> Load(const TlsServerFiles& files,
                                     const Options& options);
  static absl::StatusOr<Stamps> StatAll(const TlsServerFiles& files);

  // Constant after construction.
  const TlsServerFiles files_;
  const Options options_;

  mutable absl::Mutex mu_;
  SslCtxPtr current_ ABSL_GUARDED_BY(mu_);
  // The stamps of the files last tried (loaded or failed).
  Stamps seen_ ABSL_GUARDED_BY(mu_);
  absl::Time next_check_ ABSL_GUARDED_BY(mu_);
  bool checking_ ABSL_GUARDED_BY(mu_) = false;
  int reloads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace msgq::tls

#endif  // MSGQ_SERVER_TLS_TLS_SERVER_CONTEXT_H_
