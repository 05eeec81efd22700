// MessageManager::SetPaused: a paused table sends nothing and reads nothing
// due, while acks, nacks and the postpones of earlier sends still go out.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(MessageManagerTest, PausedTableSendsNothingAndResumeSendsBacklog) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2, .cache_size = 100}));
  PutDue(Range(1, 3));
  auto sub = Subscribe();
  RunOnce();
  EXPECT_THAT(sub->batch_ids(),
              ElementsAre(ElementsAre("1", "2"), ElementsAre("3")));

  manager_->SetPaused(true);
  EXPECT_TRUE(stats().paused);
  PutDue(Range(4, 9));
  Complete(*sub);  // free slots: still nothing is sent
  manager_->NoteDueAt(Now() - kSecond);
  manager_->RequestPoll();
  Advance(absl::Hours(2));  // past the poll interval too
  RunOnce();
  RunOnce();
  EXPECT_EQ(sub->batches.size(), 2u);
  EXPECT_EQ(store_->poll_calls(), 1);  // no reads while paused
  EXPECT_EQ(stats().queued, 0);
  EXPECT_EQ(stats().sent, 3);

  manager_->SetPaused(false);
  EXPECT_FALSE(stats().paused);
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  Complete(*sub);
  EXPECT_THAT(sub->ids(),
              ElementsAre("1", "2", "3", "4", "5", "6", "7", "8", "9"));
  EXPECT_EQ(stats().sent, 9);
  // 1..3 were postponed by ack wait + backoff (60 s) while paused, in the
  // first round after the pause: they come back once that has passed.
  Advance(absl::Seconds(61));
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2", "3", "4", "5", "6", "7", "8",
                                      "9", "1", "2", "3"));
  EXPECT_EQ(stats().redelivered, 3);
}

TEST_F(MessageManagerTest, PauseStopsSendsFromTheCacheAtOnce) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1, .cache_size = 100}));
  PutDue(Range(1, 10));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_EQ(sub->batches.size(), 2u);  // two batches outstanding at most
  EXPECT_EQ(stats().queued, 8);

  manager_->SetPaused(true);
  EXPECT_EQ(stats().queued, 0);  // they stay due in MySQL
  Complete(*sub);
  EXPECT_EQ(sub->batches.size(), 2u);
  // A subscriber arriving while paused gets nothing either.
  auto late = Subscribe();
  RunOnce();
  EXPECT_THAT(late->batches, IsEmpty());
  EXPECT_EQ(sub->batches.size(), 2u);
}

TEST_F(MessageManagerTest, AcksAndPostponesGoOutWhilePaused) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 10, .cache_size = 100, .ack_wait_s = 30}));
  PutDue(Range(1, 4));
  auto sub = Subscribe();
  manager_->RunOnce();  // poll + send
  ASSERT_EQ(sub->ids().size(), 4u);
  manager_->SetPaused(true);
  RunOnce();  // the postpones of the sends are written while paused
  ASSERT_EQ(store_->write_calls(), 1);
  // ack wait + backoff of epoch 0 (vt_min_backoff defaults to the ack wait)
  EXPECT_EQ(store_->Find("3")->time_next, Now() + 60 * kSecond);
  EXPECT_EQ(store_->Find("3")->epoch, 1);

  auto acked = Ack({"1", "2"});
  RunOnce();
  EXPECT_EQ(acked->calls, 1);
  ASSERT_TRUE(acked->result.ok()) << acked->result.status();
  EXPECT_EQ(*acked->result, 2);
  EXPECT_TRUE(store_->Find("1")->time_acked.has_value());

  // 3 and 4 keep their ack wait; past it they are due, but not sent.
  Advance(absl::Seconds(61));
  RunOnce();
  EXPECT_EQ(sub->ids().size(), 4u);
  manager_->SetPaused(false);
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2", "3", "4", "3", "4"));
  EXPECT_EQ(stats().redelivered, 2);
}

TEST_F(MessageManagerTest, SetPausedIsIdempotent) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .cache_size = 100}));
  PutDue(Range(1, 2));
  auto sub = Subscribe();
  manager_->SetPaused(false);  // not paused: nothing changes
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(sub->ids().size(), 2u);
  manager_->SetPaused(true);
  manager_->SetPaused(true);
  EXPECT_TRUE(stats().paused);
  manager_->SetPaused(false);
  manager_->SetPaused(false);
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);  // one poll at resume
}

}  // namespace
}  // namespace msgq::manager_test
