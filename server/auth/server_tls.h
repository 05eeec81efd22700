// msgqd's TLS files (--tls_cert, --tls_key, --tls_client_ca) and their
// check at start. Every port serves them through its own reloading
// context (server/tls/tls_server_context.h for the gRPC and MySQL-protocol
// ports, server/http/gnutls_credentials.h for HTTPS).
//
// Thread-safety: free functions, no shared state.
#ifndef MSGQ_SERVER_AUTH_SERVER_TLS_H_
#define MSGQ_SERVER_AUTH_SERVER_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace msgq::auth {

struct TlsFiles {
  std::string cert;       // PEM certificate chain, leaf first
  std::string key;        // PEM private key of the leaf
  std::string client_ca;  // PEM CA bundle; non-empty: require client certs
  bool enabled() const { return !cert.empty(); }
};

// Checks the files now so that msgqd refuses to start with a clear error
// (a port would otherwise fail only at its first handshake): OK when TLS is
// off; INVALID_ARGUMENT naming the flag when only one of cert and key is given,
// a client CA without them, a file that does not read or hold PEM of the
// right kind, or a key that does not belong to the certificate.
absl::Status CheckTlsFiles(const TlsFiles& files);

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_SERVER_TLS_H_
