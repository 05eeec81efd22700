// Subscribers that stop reading (dispatcher.h, "Stuck subscribers"): the
// resend of a message avoids the subscriber that had it when its ack wait
// ran out, and a subscriber that lapsed so gets at most one batch at a time
// while another in good standing is there, until it acks.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;

class StuckSubscriberTest : public MessageManagerTest {};

// Two subscribers, a message each, nobody acks: each resend goes to the
// other subscriber (plain round-robin would send each back where it was).
TEST_F(StuckSubscriberTest, AResendAvoidsTheSubscriberThatHadTheMessage) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1}));
  auto a = Subscribe();
  auto b = Subscribe();
  PutDue({"1", "2"});
  RunOnce();
  EXPECT_THAT(a->ids(), ElementsAre("1"));
  EXPECT_THAT(b->ids(), ElementsAre("2"));
  Complete(*a);
  Complete(*b);
  RunOnce();  // the postpones: due again after ack wait + backoff, 60 s
  Advance(absl::Seconds(61));
  RunOnce();
  EXPECT_THAT(a->ids(), ElementsAre("1", "2"));
  EXPECT_THAT(b->ids(), ElementsAre("2", "1"));
  Complete(*a);
  Complete(*b);
  RunOnce();
  Advance(absl::Seconds(121));  // epoch 1: 30 s + 60 s of backoff
  RunOnce();
  EXPECT_THAT(a->ids(), ElementsAre("1", "2", "1"));
  EXPECT_THAT(b->ids(), ElementsAre("2", "1", "2"));
}

// A subscriber whose message ran out its ack wait gets nothing while the
// one that acks can take it, one batch when that one is busy, and its
// share again once it acks.
TEST_F(StuckSubscriberTest, ALapsedSubscriberGetsOneBatchAtATimeUntilItAcks) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1}));
  auto live = Subscribe();
  auto stuck = Subscribe();
  PutDue({"1", "2"});
  RunOnce();
  EXPECT_THAT(live->ids(), ElementsAre("1"));
  EXPECT_THAT(stuck->ids(), ElementsAre("2"));
  Complete(*live);
  Complete(*stuck);
  auto acked = Ack({"1"});
  RunOnce();
  Advance(absl::Seconds(61));
  RunOnce();  // 2 is due again: `stuck` lapses, and 2 goes to `live`
  EXPECT_THAT(live->ids(), ElementsAre("1", "2"));
  EXPECT_THAT(stuck->ids(), ElementsAre("2"));
  Complete(*live);
  auto acked2 = Ack({"2"});

  PutDue(Range(3, 6));
  manager_->RequestPoll();
  RunOnce();
  // `live` takes two batches (max_batches_per_subscriber); while they are
  // not written `stuck`, holding nothing, gets one, and no more.
  EXPECT_THAT(live->ids(), ElementsAre("1", "2", "3", "4"));
  EXPECT_THAT(stuck->ids(), ElementsAre("2", "5"));
  Complete(*stuck);
  EXPECT_THAT(stuck->ids(), ElementsAre("2", "5"));
  Complete(*live);
  EXPECT_THAT(live->ids(), ElementsAre("1", "2", "3", "4", "6"));
  EXPECT_EQ(stats().queued, 0);

  // Its ack of 5 brings `stuck` back: round-robin again.
  auto acked5 = Ack({"5"});
  PutDue(Range(7, 8));
  manager_->RequestPoll();
  RunOnce();
  EXPECT_THAT(stuck->ids(), ElementsAre("2", "5", "7"));
  EXPECT_THAT(live->ids(), ElementsAre("1", "2", "3", "4", "6", "8"));
}

// With one subscriber the resend goes back to it: nobody else can take it.
TEST_F(StuckSubscriberTest, ALoneSubscriberStillGetsItsResends) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10}));
  auto only = Subscribe();
  PutDue({"1", "2"});
  RunOnce();
  Complete(*only);
  RunOnce();
  Advance(absl::Seconds(61));
  RunOnce();
  EXPECT_THAT(only->batch_ids(),
              ElementsAre(ElementsAre("1", "2"), ElementsAre("1", "2")));
}

}  // namespace
}  // namespace msgq::manager_test
