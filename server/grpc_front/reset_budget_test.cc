#include "server/grpc_front/reset_budget.h"

#include "gtest/gtest.h"

namespace msgq::grpc_front {
namespace {

TEST(ResetBudgetTest, AnAddressGetsItsBurstThenItsRate) {
  FakeClock clock(absl::UnixEpoch() + absl::Hours(1));
  ResetBudget budget({.burst = 10, .per_second = 2, .clock = &clock});
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(budget.Take("10.0.0.1")) << i;
  EXPECT_FALSE(budget.Take("10.0.0.1"));
  // Another address has its own.
  EXPECT_TRUE(budget.Take("10.0.0.2"));
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(budget.Take("10.0.0.1"));
  EXPECT_TRUE(budget.Take("10.0.0.1"));
  EXPECT_FALSE(budget.Take("10.0.0.1"));
}

TEST(ResetBudgetTest, TokensRefillAtTheRateUpToTheBurst) {
  FakeClock clock(absl::UnixEpoch() + absl::Hours(1));
  ResetBudget budget({.burst = 10, .per_second = 2, .clock = &clock});
  EXPECT_DOUBLE_EQ(budget.Tokens("10.0.0.1"), 10);  // a stranger
  for (int i = 0; i < 10; ++i) budget.Take("10.0.0.1");
  EXPECT_DOUBLE_EQ(budget.Tokens("10.0.0.1"), 0);
  clock.Advance(absl::Milliseconds(2400));
  EXPECT_DOUBLE_EQ(budget.Tokens("10.0.0.1"), 4.8);
  clock.Advance(absl::Seconds(60));
  EXPECT_DOUBLE_EQ(budget.Tokens("10.0.0.1"), 10);
}

TEST(ResetBudgetTest, RemembersAtMostMaxAddressesForgettingFullOnesFirst) {
  FakeClock clock(absl::UnixEpoch() + absl::Hours(1));
  ResetBudget budget(
      {.burst = 4, .per_second = 1, .max_addresses = 3, .clock = &clock});
  budget.Take("a");  // 3 left: full again 1 s later
  clock.Advance(absl::Seconds(1));
  for (int i = 0; i < 4; ++i) budget.Take("b");  // emptied
  clock.Advance(absl::Milliseconds(100));
  budget.Take("c");
  clock.Advance(absl::Milliseconds(100));
  budget.Take("d");  // "a" is full again: forgotten, not "b"
  EXPECT_EQ(budget.addresses(), 3u);
  EXPECT_DOUBLE_EQ(budget.Tokens("b"), 0.2);  // also refreshes "b"
  clock.Advance(absl::Milliseconds(100));
  // None is full: the least recently refreshed ("c") goes.
  budget.Take("e");
  EXPECT_EQ(budget.addresses(), 3u);
  EXPECT_DOUBLE_EQ(budget.Tokens("c"), 4);  // a stranger again
  EXPECT_DOUBLE_EQ(budget.Tokens("b"), 0.3);
  EXPECT_DOUBLE_EQ(budget.Tokens("d"), 3.1);
}

}  // namespace
}  // namespace msgq::grpc_front
