#include "engine/queue/rate_limiter.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(RateLimiterTest, StartsFullThenRefillsAtTheRate) {
  RateLimiter r(50, 10, kStart);
  EXPECT_EQ(r.Available(kStart), 10u);
  r.Take(10);
  EXPECT_EQ(r.Available(kStart), 0u);
  EXPECT_EQ(r.NextToken(kStart), kStart + absl::Milliseconds(20));
  EXPECT_EQ(r.Available(kStart + absl::Milliseconds(19)), 0u);
  EXPECT_EQ(r.Available(kStart + absl::Milliseconds(20)), 1u);
  EXPECT_EQ(r.Available(kStart + absl::Milliseconds(100)), 5u);
  // Never above the burst.
  EXPECT_EQ(r.Available(kStart + absl::Hours(1)), 10u);
}

TEST(RateLimiterTest, FractionalRates) {
  RateLimiter r(0.5, 1, kStart);  // one message every 2 s
  EXPECT_EQ(r.Available(kStart), 1u);
  r.Take(1);
  EXPECT_EQ(r.NextToken(kStart), kStart + absl::Seconds(2));
  EXPECT_EQ(r.Available(kStart + absl::Seconds(1)), 0u);
  EXPECT_EQ(r.NextToken(kStart + absl::Seconds(1)), kStart + absl::Seconds(2));
  EXPECT_EQ(r.Available(kStart + absl::Seconds(2)), 1u);
}

}  // namespace
}  // namespace msgq
