// GnutlsCredentials: the HTTPS port's certificate chain, private key and
// client CA in GnuTLS form (libmicrohttpd does TLS with GnuTLS), read from
// the same PEM files as the other ports and re-read when they change
// (certificate rotation without restart).
//
// Acquire() hands out the current Set for a new handshake (a shared
// reference: a connection keeps the set it started with after a
// rotation). At most once per `reload_interval` (monotonic clock), the next
// Acquire() stats the files; when one changed (modification time, size,
// inode or permission bits) it reads them and builds a new Set. A new set
// that does not load (unreadable, not PEM, a key that does not match the
// certificate, a key that group or others may read) is logged once per
// change and the previous set stays in force: replace the files
// atomically, as for tls::TlsServerContext, whose rules these are.
//
// With a client CA, VerifyClient() is the check of a client's certificate
// chain during the handshake (HttpServer installs it on each TLS session):
// a client without a certificate, or with one the CA did not sign, fails
// the handshake.
//
// Example:
//   auto creds = GnutlsCredentials::Create(
//       {.cert = "/etc/msgq/server.pem", .key = "/etc/msgq/server.key"});
//   std::shared_ptr<const GnutlsCredentials::Set> set = (*creds)->Acquire();
//   // set->chain(), set->chain_length(), set->key() for
//   // gnutls_certificate_retrieve_function2.
//
// Thread-safety: thread-safe. Acquire() may be called from any thread; the
// files are read without holding the lock, by one caller at a time (the
// others keep getting the current set meanwhile). A Set is immutable.
#ifndef MSGQ_SERVER_HTTP_GNUTLS_CREDENTIALS_H_
#define MSGQ_SERVER_HTTP_GNUTLS_CREDENTIALS_H_

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/auth/watched_file.h"
#include "server/tls/tls_server_context.h"

namespace msgq {

class GnutlsCredentials {
 public:
  struct Options {
    // Reads MonotonicNow() for the reload interval; must outlive the object.
    Clock* clock = RealClock::Get();
  };

  // One loaded set of files. Owns its GnuTLS objects (freed with it);
  // immutable, so handshakes may share it.
  class Set {
   public:
    ~Set();
    Set(const Set&) = delete;
    Set& operator=(const Set&) = delete;

    // The chain, leaf first, and the leaf's key, as
    // gnutls_certificate_retrieve_function2 hands them to GnuTLS (which
    // neither frees nor changes them).
    gnutls_pcert_st* chain() const {
      return const_cast<gnutls_pcert_st*>(chain_.data());
    }
    unsigned chain_length() const {
      return static_cast<unsigned>(chain_.size());
    }
    gnutls_privkey_t key() const { return key_; }
    // The client CA; null without one.
    gnutls_x509_trust_list_t client_ca() const { return client_ca_; }

   private:
    friend class GnutlsCredentials;
    Set() = default;
    std::vector<gnutls_pcert_st> chain_;
    gnutls_privkey_t key_ = nullptr;
    gnutls_x509_trust_list_t client_ca_ = nullptr;
  };

  // Loads the files now. INVALID_ARGUMENT naming the file and the problem,
  // with tls::TlsServerContext's wording: "TLS certificate PATH: cannot
  // read PATH: ...", "... holds no PEM certificate", "TLS key PATH: holds
  // no unencrypted PEM private key", "TLS key PATH: is not the key of the
  // certificate in CERT", "TLS client CA PATH: holds no PEM certificate";
  // also when cert or key is empty or the reload interval is negative.
  // FAILED_PRECONDITION "TLS key PATH: mode 0644 lets group or others read
  // it; chmod 600 it" when group or others may read the key.
  static absl::StatusOr<std::unique_ptr<GnutlsCredentials>> Create(
      tls::TlsServerFiles files, Options options);
  static absl::StatusOr<std::unique_ptr<GnutlsCredentials>> Create(
      tls::TlsServerFiles files) {
    return Create(std::move(files), Options());
  }
  GnutlsCredentials(const GnutlsCredentials&) = delete;
  GnutlsCredentials& operator=(const GnutlsCredentials&) = delete;

  // The set for a new handshake; first re-reads the files when the reload
  // interval passed since the last check and one of them changed. Never
  // null.
  std::shared_ptr<const Set> Acquire();

  // Checks the files now, whatever the interval: OK when they are
  // unchanged or were loaded; the load error (as from Create) when they
  // changed and do not load, in which case the previous set stays. The
  // error of a given change is returned (and logged) once.
  absl::Status ReloadNow();

  // Checks the client certificate chain of `session` (a server session
  // whose handshake received the client's Certificate message) against
  // `set`'s client CA: OK; PERMISSION_DENIED "peer did not return a
  // certificate" or "certificate verify failed: REASON" (REASON from
  // GnuTLS, e.g. "The certificate issuer is unknown."). OK when `set` has
  // no client CA.
  static absl::Status VerifyClient(const Set& set, gnutls_session_t session);

  bool requires_client_certificate() const { return !files_.client_ca.empty(); }
  const tls::TlsServerFiles& files() const { return files_; }
  // How many times a changed set of files was loaded since Create.
  int reloads() const;

 private:
  struct Stamps {
    auth::FileStamp cert, key, client_ca;
    bool operator==(const Stamps&) const = default;
  };
  struct Loaded {
    std::shared_ptr<const Set> set;
    Stamps stamps;
  };

  GnutlsCredentials(tls::TlsServerFiles files, Options options, Loaded loaded);
  static Stamps StatAll(const tls::TlsServerFiles& files);
  // Stats and reads the files and builds a set (no lock held).
  static absl::StatusOr<Loaded> Load(const tls::TlsServerFiles& files);

  // Constant after construction.
  const tls::TlsServerFiles files_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const Set> current_ ABSL_GUARDED_BY(mu_);
  // The stamps of the files last tried (loaded or failed).
  Stamps seen_ ABSL_GUARDED_BY(mu_);
  absl::Time next_check_ ABSL_GUARDED_BY(mu_);
  bool checking_ ABSL_GUARDED_BY(mu_) = false;
  int reloads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_GNUTLS_CREDENTIALS_H_
