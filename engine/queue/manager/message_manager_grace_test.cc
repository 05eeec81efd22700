// MessageManager's postpone grace (Options::postpone_grace): a sent
// message's postpone waits that long, and an ack that comes first cancels
// it, so the message costs one row update instead of two.
#include <memory>
#include <string>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class PostponeGraceTest : public MessageManagerTest {
 protected:
  PostponeGraceTest() { postpone_grace_ = absl::Milliseconds(50); }
};

TEST_F(PostponeGraceTest, AnAckWithinTheGraceMeansThePostponeIsNeverWritten) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101", "102"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102"));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 0);  // in their grace
  Advance(absl::Milliseconds(20));
  auto ack = Ack({"101", "102"});
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_THAT(store_->writes()[0].batch.postpones, IsEmpty());
  EXPECT_THAT(store_->writes()[0].batch.ack_groups,
              ElementsAre(std::vector<std::string>{"101", "102"}));
  ASSERT_EQ(ack->calls, 1);
  ASSERT_TRUE(ack->result.ok()) << ack->result.status();
  EXPECT_EQ(*ack->result, 2);
  EXPECT_EQ(stats().postponed, 0);
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(store_->Find("101")->epoch, 0);  // never postponed
}

TEST_F(PostponeGraceTest, ThePostponeIsWrittenWhenTheGraceRunsOut) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1, .ack_wait_s = 30},
                               {.max_batches_per_subscriber = 1}));
  PutDue({"101", "102"});
  auto sub = Subscribe();
  RunOnce();  // 101 sent at t
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  Advance(absl::Milliseconds(30));
  Complete(*sub);  // 102 sent at t + 30 ms
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102"));
  Advance(absl::Milliseconds(19));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 0);
  Advance(absl::Milliseconds(1));  // t + 50 ms: 101's grace ran out
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  const WriteBatch& first = store_->writes()[0].batch;
  ASSERT_EQ(first.postpones.size(), 1u);
  EXPECT_EQ(first.postpones[0].id, "101");
  // now + ack_wait + min_backoff (= ack_wait) * 2^0 * 1.0.
  EXPECT_EQ(first.postpones[0].time_next, Now() + 60 * kSecond);
  EXPECT_EQ(store_->Find("101")->epoch, 1);
  EXPECT_EQ(stats().in_flight, 1);  // 102, still in its grace
  Advance(absl::Milliseconds(30));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 2);
  ASSERT_EQ(store_->writes()[1].batch.postpones.size(), 1u);
  EXPECT_EQ(store_->writes()[1].batch.postpones[0].id, "102");
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(stats().postponed, 2);
}

// The grace is at most a tenth of the table's ack wait, so redelivery stays
// close to the ack wait a short one promises.
TEST_F(PostponeGraceTest, TheGraceIsAtMostATenthOfTheAckWait) {
  postpone_grace_ = absl::Seconds(1);
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 1}));
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  Advance(absl::Milliseconds(99));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 0);
  Advance(absl::Milliseconds(1));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_THAT(PostponedIds(store_->writes()[0].batch), ElementsAre("101"));
}

// A handover waits for Quiesced(): a disowned manager writes every
// postpone at once instead of waiting out the grace.
TEST_F(PostponeGraceTest, ADisownedManagerPostponesAtOnce) {
  MessageManager::Options options;
  options.leased = true;
  ASSERT_NO_FATAL_FAILURE(Init({}, options));
  manager_->Own(clock_.MonotonicNow() + absl::Seconds(3), /*images_wait=*/true);
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 0);
  EXPECT_FALSE(manager_->Quiesced());
  manager_->Disown();
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_EQ(store_->writes()[0].batch.postpones.size(), 1u);
  EXPECT_TRUE(manager_->Quiesced());
}

// A nack within the grace: the round writes the send's postpone first (so
// the row's epoch is the one the nack checks), then the nack.
TEST_F(PostponeGraceTest, ANackWithinTheGraceWritesThePostponeFirst) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  MessageManager::NackRequest request;
  request.deliveries.push_back({"101", 0});
  request.delay = absl::Seconds(5);
  int calls = 0;
  absl::StatusOr<NackCount> result;
  manager_->Nack(std::move(request), [&](absl::StatusOr<NackCount> r) {
    ++calls;
    result = std::move(r);
  });
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  const WriteBatch& w = store_->writes()[0].batch;
  ASSERT_EQ(w.postpones.size(), 1u);
  EXPECT_EQ(w.postpones[0].id, "101");
  ASSERT_EQ(w.nack_groups.size(), 1u);
  ASSERT_EQ(calls, 1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->retried, 1);
  EXPECT_EQ(*store_->Find("101")->time_next, Now() + 5 * kSecond);
}

}  // namespace
}  // namespace msgq::manager_test
