// The Authorizer (authorizer.h) applied to a gRPC call: its `authorization`
// metadata and, with mTLS, the identity of its verified client certificate.
//
// Thread-safety: as the Authorizer; reads only the call's context.
#ifndef MSGQ_SERVER_AUTH_GRPC_AUTH_H_
#define MSGQ_SERVER_AUTH_GRPC_AUTH_H_

#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/authorizer.h"

namespace msgq::auth {

// The calling principal, or UNAUTHENTICATED (see Authorizer::Authenticate).
absl::StatusOr<std::string> AuthenticateCall(
    const Authorizer& authorizer, const grpc::ServerContextBase& context);

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_GRPC_AUTH_H_
