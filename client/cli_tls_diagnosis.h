// TlsDiagnosis: why the msgq CLI could not connect to a msgqd, in words,
// when gRPC's own text ("Socket closed", "Peer name ... is not in peer
// certificate") does not say: a plaintext client against a TLS port, a
// TLS client against a plaintext port, a server that requires a client
// certificate none was sent for, or a server certificate that does not name
// the host dialed (and which names it does have).
//
// Example:
//   std::string why = DiagnoseTlsFailure("127.0.0.1:15999", security,
//                                        status.message());
//   // "the server speaks TLS: give --tls_ca (...)"
//
// DiagnoseTlsFailure looks at gRPC's message and, when it tells of a
// failed connection ("failed to connect", "Socket closed", a handshake, a
// peer name) but not of a cause it cannot improve on (connection refused,
// name resolution, a deadline), makes one TLS handshake of its own with OpenSSL
// to `server` (without verifying the certificate: it only reads what the server
// offers and asks for), bounded by 3 s. Returns the explanation, or ""
// when it finds nothing to add.
//
// Thread-compatible (no shared state); blocks for the handshake.
#ifndef MSGQ_CLIENT_CLI_TLS_DIAGNOSIS_H_
#define MSGQ_CLIENT_CLI_TLS_DIAGNOSIS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "msgq/credentials.h"

namespace msgq {

std::string DiagnoseTlsFailure(const std::string& server,
                               const ChannelSecurity& security,
                               absl::string_view grpc_message);

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLI_TLS_DIAGNOSIS_H_
