#include "msgq/handler_result.h"

#include <functional>

#include "gtest/gtest.h"
#include "msgq/message.h"

namespace msgq {
namespace {

using Kind = HandlerResult::Kind;

TEST(HandlerResultTest, Factories) {
  EXPECT_EQ(HandlerResult::Ack().kind(), Kind::kAck);

  HandlerResult retry = HandlerResult::Retry("busy");
  EXPECT_EQ(retry.kind(), Kind::kRetry);
  EXPECT_EQ(retry.delay(), std::nullopt);
  EXPECT_EQ(retry.reason(), "busy");

  HandlerResult later = HandlerResult::RetryAfter(absl::Seconds(3), "later");
  EXPECT_EQ(later.kind(), Kind::kRetry);
  EXPECT_EQ(later.delay(), absl::Seconds(3));
  EXPECT_EQ(later.reason(), "later");
  EXPECT_EQ(HandlerResult::RetryAfter(absl::Seconds(-1)).delay(),
            absl::ZeroDuration());

  HandlerResult dead = HandlerResult::Dead("bad json");
  EXPECT_EQ(dead.kind(), Kind::kDead);
  EXPECT_EQ(dead.delay(), std::nullopt);
  EXPECT_EQ(dead.reason(), "bad json");
}

TEST(HandlerResultTest, AStatusConverts) {
  EXPECT_EQ(HandlerResult(absl::OkStatus()), HandlerResult::Ack());
  EXPECT_EQ(HandlerResult(absl::UnavailableError("db down")),
            HandlerResult::Retry("db down"));
  // A handler written against the old signature still fits.
  std::function<HandlerResult(const Message&)> handler = [](const Message&) {
    return absl::InternalError("boom");
  };
  (void)handler;
}

}  // namespace
}  // namespace msgq
