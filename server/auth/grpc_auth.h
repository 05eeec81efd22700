// The Authorizer (authorizer.h) applied to a gRPC call: its `authorization`
// metadata and, with mTLS, the identity of its verified client certificate.
//
// One certificate, one principal, on every port: the certificate's
// identities are gRPC's peer identity (the auth context's
// x509_subject_alternative_name values when the certificate has a
// subjectAltName, in certificate order: DNS, email and URI names, IP
// addresses as text, "other types of SAN" for any other kind; else its
// x509_common_name), and the Authorizer takes the first. The MySQL-protocol
// port reads the same list from the certificate itself
// (tls::TlsConnection::PeerIdentities); both leave empty names out, so a
// certificate without a name is no principal (not the principal "").
//
// A call on a connection of msgqd's gRPC front (server/grpc_front/) has no
// certificate in gRPC's auth context: the front verified it, and `peers`
// has its identities under the call's peer() (peer_directory.h). `peers`
// may be null (no front).
//
// Thread-safety: as the Authorizer; reads only the call's context and
// `peers`.
#ifndef MSGQ_SERVER_AUTH_GRPC_AUTH_H_
#define MSGQ_SERVER_AUTH_GRPC_AUTH_H_

#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/authorizer.h"
#include "server/auth/peer_directory.h"

namespace msgq::auth {

// The calling principal, or UNAUTHENTICATED (see Authorizer::Authenticate).
absl::StatusOr<std::string> AuthenticateCall(
    const Authorizer& authorizer, const PeerDirectory* peers,
    const grpc::ServerContextBase& context);
// The same, with the token's digest (for StillAuthenticates).
absl::StatusOr<Authorizer::Credential> AuthenticateCallCredential(
    const Authorizer& authorizer, const PeerDirectory* peers,
    const grpc::ServerContextBase& context);

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_GRPC_AUTH_H_
