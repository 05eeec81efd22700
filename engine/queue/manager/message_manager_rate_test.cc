// msgq_rate_limit / msgq_rate_burst: a token bucket on the table's sends,
// on the fake clock; exact counts.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

TEST_F(MessageManagerTest, RateLimitSendsTheBurstThenOnePerToken) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 10,
            .cache_size = 100,
            .extra = ",msgq_rate_limit=10,msgq_rate_burst=5"}));
  PutDue(Range(1, 30));
  auto sub = Subscribe();
  RunOnce();
  EXPECT_EQ(stats().sent, 5);  // the burst, in one batch
  ASSERT_EQ(sub->batches.size(), 1u);
  EXPECT_EQ(sub->batches[0].size(), 5u);
  Complete(*sub);  // a free slot, no token
  EXPECT_EQ(stats().sent, 5);
  RunOnce();  // no token yet: the round sends nothing
  EXPECT_EQ(stats().sent, 5);

  Advance(absl::Milliseconds(99));
  RunOnce();
  EXPECT_EQ(stats().sent, 5);
  Advance(absl::Milliseconds(1));  // 100 ms: one token
  RunOnce();
  EXPECT_EQ(stats().sent, 6);
  Complete(*sub);
  Advance(absl::Milliseconds(350));  // 3.5 tokens
  RunOnce();
  EXPECT_EQ(stats().sent, 9);
  Complete(*sub);
  Advance(absl::Seconds(10));  // capped at the burst
  RunOnce();
  EXPECT_EQ(stats().sent, 14);
  Complete(*sub);
  EXPECT_EQ(stats().sent, 14);
}

TEST_F(MessageManagerTest, RateLimitCountsRedeliveries) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10,
                                .cache_size = 100,
                                .ack_wait_s = 1,
                                .extra = ",msgq_rate_limit=1,msgq_rate_burst=2,"
                                         "vt_min_backoff=1"}));
  PutDue(Range(1, 2));
  auto sub = Subscribe();
  RunOnce();
  Complete(*sub);
  EXPECT_EQ(stats().sent, 2);
  RunOnce();  // postpones: due again in 2 s
  Advance(absl::Seconds(2));
  RunOnce();  // both due again, two tokens back
  Complete(*sub);
  EXPECT_EQ(stats().sent, 4);
  EXPECT_EQ(stats().redelivered, 2);
  RunOnce();
  Advance(absl::Seconds(2));
  PutDue(Range(3, 5));
  manager_->RequestPoll();
  RunOnce();  // 1, 2, 3, 4, 5 due; two tokens
  Complete(*sub);
  EXPECT_EQ(stats().sent, 6);
}

TEST_F(MessageManagerTest, WithoutRateLimitNothingIsHeldBack) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .cache_size = 100}));
  PutDue(Range(1, 30));
  auto sub = Subscribe();
  RunOnce();
  Complete(*sub);
  EXPECT_EQ(stats().sent, 30);
}

}  // namespace
}  // namespace msgq::manager_test
