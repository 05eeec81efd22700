// Conversion of absl::Status to grpc::Status, keeping code and message.
#ifndef MSGQ_SERVER_GRPC_STATUS_H_
#define MSGQ_SERVER_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace msgq {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace msgq

#endif  // MSGQ_SERVER_GRPC_STATUS_H_
