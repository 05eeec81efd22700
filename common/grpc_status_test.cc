#include "common/grpc_status.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(GrpcStatusTest, EveryCodeAndMessageSurvivesBothWays) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status s(static_cast<absl::StatusCode>(code), "why: \xff");
    const grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), "why: \xff");
    EXPECT_EQ(FromGrpcStatus(g), s);
  }
}

TEST(GrpcStatusTest, OkIsOkWithoutMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::OkStatus()).error_message(), "");
  EXPECT_EQ(FromGrpcStatus(grpc::Status::OK), absl::OkStatus());
}

TEST(GrpcStatusTest, RetryableStreamErrors) {
  for (absl::StatusCode code :
       {absl::StatusCode::kOk, absl::StatusCode::kUnavailable,
        absl::StatusCode::kDeadlineExceeded,
        absl::StatusCode::kResourceExhausted, absl::StatusCode::kAborted,
        absl::StatusCode::kInternal, absl::StatusCode::kUnknown,
        absl::StatusCode::kCancelled}) {
    EXPECT_TRUE(IsRetryableStreamError(absl::Status(code, "x"))) << code;
  }
  for (absl::StatusCode code :
       {absl::StatusCode::kNotFound, absl::StatusCode::kInvalidArgument,
        absl::StatusCode::kFailedPrecondition, absl::StatusCode::kUnimplemented,
        absl::StatusCode::kPermissionDenied, absl::StatusCode::kUnauthenticated,
        absl::StatusCode::kAlreadyExists, absl::StatusCode::kOutOfRange,
        absl::StatusCode::kDataLoss}) {
    EXPECT_FALSE(IsRetryableStreamError(absl::Status(code, "x"))) << code;
  }
}

}  // namespace
}  // namespace msgq
