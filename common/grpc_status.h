// Conversions between gRPC's status and absl::Status (both directions; the
// one copy for client/ and server/), and the client's policy on which
// stream errors are worth a reconnect.
//
// The two code spaces are numerically identical, so the server's code and
// message survive unchanged.
//
// Example:
//   grpc::Status s = stub->ListTables(&ctx, request, &response);
//   if (!s.ok()) return FromGrpcStatus(s);
//
// Thread-safe (pure functions).
#ifndef MSGQ_COMMON_GRPC_STATUS_H_
#define MSGQ_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace msgq {

// The grpc::Status with the same code and message as `status`.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The absl::Status with the same code and message as `status`.
absl::Status FromGrpcStatus(const grpc::Status& status);

// True when a MessageStream that ended with `status` should be reopened after
// a backoff: UNAVAILABLE (server shutting down, table reloaded, connection
// dropped), and the codes a broken or overloaded connection produces
// (DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNKNOWN,
// CANCELLED when not requested by us). OK counts too: a stream is never
// supposed to end successfully. NOT_FOUND, INVALID_ARGUMENT,
// FAILED_PRECONDITION, UNIMPLEMENTED, PERMISSION_DENIED, UNAUTHENTICATED and
// the rest are the caller's to fix and are never retried.
bool IsRetryableStreamError(const absl::Status& status);

}  // namespace msgq

#endif  // MSGQ_COMMON_GRPC_STATUS_H_
