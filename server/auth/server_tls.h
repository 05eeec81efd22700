// TLS for msgqd's gRPC port (--tls_cert, --tls_key, --tls_client_ca).
//
// The server credentials come from gRPC's FileWatcherCertificateProvider:
// the files are re-read every `refresh` and a new connection gets the
// certificate found last (rotation without restart; established
// connections keep theirs). Replace the files atomically (write new files,
// then rename them over the old ones): a key and certificate that do not
// match are skipped by gRPC until they do.
//
// Thread-safety: free functions, no shared state.
#ifndef MSGQ_SERVER_AUTH_SERVER_TLS_H_
#define MSGQ_SERVER_AUTH_SERVER_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"

namespace msgq::auth {

struct TlsFiles {
  std::string cert;       // PEM certificate chain, leaf first
  std::string key;        // PEM private key of the leaf
  std::string client_ca;  // PEM CA bundle; non-empty: require client certs
  bool enabled() const { return !cert.empty(); }
};

// Checks the files now so that msgqd refuses to start with a clear error
// (gRPC's provider would only log and serve nothing): OK when TLS is off;
// INVALID_ARGUMENT naming the flag when only one of cert and key is given,
// a client CA without them, a file that does not read or hold PEM of the
// right kind, or a key that does not belong to the certificate.
absl::Status CheckTlsFiles(const TlsFiles& files);

// Credentials watching `files` (which passed CheckTlsFiles and are
// enabled), re-read every `refresh` (at least a second).
std::shared_ptr<grpc::ServerCredentials> WatchedServerCredentials(
    const TlsFiles& files, absl::Duration refresh);

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_SERVER_TLS_H_
