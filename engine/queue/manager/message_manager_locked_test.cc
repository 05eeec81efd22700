// MessageManager and rows another transaction keeps locked (the store
// reports them in WriteResult::locked): only their postpones and acks wait,
// retried every Options::locked_retry until they commit, and the rows stay
// in flight meanwhile (fixture in message_manager_fixture.h).
#include <memory>
#include <string>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;

class LockedRowsTest : public MessageManagerTest {
 protected:
  // 101..104 sent in one batch, written; 102 locked by another
  // transaction before their postpones.
  void SendWith102Locked(std::shared_ptr<FakeSubscriber>& sub) {
    PutDue(Range(101, 104));
    sub = Subscribe();
    RunOnce();
    ASSERT_THAT(sub->ids(), ElementsAre("101", "102", "103", "104"));
    Complete(*sub);
    store_->LockRows({"102"});
    RunOnce();
  }
};

TEST_F(LockedRowsTest, OnlyTheLockedRowsPostponeAndAckWait) {
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}));
  std::shared_ptr<FakeSubscriber> sub;
  ASSERT_NO_FATAL_FAILURE(SendWith102Locked(sub));
  EXPECT_EQ(store_->Find("101")->epoch, 1);
  EXPECT_EQ(store_->Find("102")->epoch, 0);  // still due in MySQL
  EXPECT_EQ(store_->Find("103")->epoch, 1);
  EXPECT_EQ(stats().postponed, 3);
  EXPECT_EQ(stats().locked_rows, 1);
  EXPECT_EQ(stats().locked_rows_waiting, 1);
  EXPECT_EQ(stats().in_flight, 1);

  // The request is answered with what it acked; 102's ack waits.
  auto ack = Ack({"101", "102"});
  RunOnce();
  ASSERT_EQ(ack->calls, 1);
  ASSERT_TRUE(ack->result.ok()) << ack->result.status();
  EXPECT_EQ(*ack->result, 1);
  EXPECT_EQ(*store_->Find("101")->time_acked, Now());
  EXPECT_FALSE(store_->Find("102")->time_acked.has_value());
  EXPECT_EQ(stats().acked, 1);
  EXPECT_EQ(stats().locked_rows, 1);  // the same row

  // MySQL has 102 due, but it is in flight: a poll does not send it again.
  manager_->RequestPoll();
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(store_->polls()[1].ids, ElementsAre("102"));
  EXPECT_EQ(sub->batches.size(), 1u);

  // Retried after Options::locked_retry (250 ms), not before.
  const int writes = store_->write_calls();
  Advance(absl::Milliseconds(249));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), writes);
  Advance(absl::Milliseconds(1));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), writes + 1);
  const WriteBatch& retry = store_->writes().back().batch;
  EXPECT_TRUE(retry.expect_locked);
  EXPECT_THAT(PostponedIds(retry), ElementsAre("102"));
  EXPECT_THAT(retry.ack_groups, ElementsAre(std::vector<std::string>{"102"}));
  EXPECT_EQ(stats().locked_rows_waiting, 1);

  // Released: the next retry writes both, the postpone first.
  store_->UnlockRows();
  Advance(absl::Milliseconds(250));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), writes + 2);
  EXPECT_EQ(store_->Find("102")->epoch, 1);
  EXPECT_EQ(*store_->Find("102")->time_acked, Now());
  EXPECT_EQ(stats().postponed, 4);
  EXPECT_EQ(stats().acked, 2);
  EXPECT_EQ(stats().locked_rows, 1);
  EXPECT_EQ(stats().locked_rows_waiting, 0);
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(ack->calls, 1);  // answered once, when it came
  Advance(absl::Seconds(1));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), writes + 2);
  EXPECT_EQ(sub->batches.size(), 1u);
}

TEST_F(LockedRowsTest, ARetryIsPostponedFromWhenItCommits) {
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}));
  std::shared_ptr<FakeSubscriber> sub;
  ASSERT_NO_FATAL_FAILURE(SendWith102Locked(sub));
  store_->UnlockRows();
  Advance(absl::Seconds(20));  // a retry long after the send
  RunOnce();
  // Due again a whole ack wait and backoff (30 + 30) after the write that
  // committed, not after the send 20 s earlier.
  EXPECT_EQ(*store_->Find("102")->time_next, Now() + 60 * kSecond);
  EXPECT_EQ(stats().locked_rows_waiting, 0);
}

TEST_F(LockedRowsTest, AHeldBackWriteIsRetriedAfterMySqlCameBack) {
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}));
  std::shared_ptr<FakeSubscriber> sub;
  ASSERT_NO_FATAL_FAILURE(SendWith102Locked(sub));
  auto ack = Ack({"102"});
  RunOnce();
  ASSERT_EQ(ack->calls, 1);
  EXPECT_EQ(*ack->result, 0);
  store_->UnlockRows();
  store_->FailNext(Op::kWrite, absl::UnavailableError("gone"));
  Advance(absl::Milliseconds(250));
  RunOnce();  // the retry fails: held back still, nobody answered twice
  EXPECT_EQ(ack->calls, 1);
  EXPECT_EQ(stats().locked_rows_waiting, 1);
  EXPECT_EQ(stats().in_flight, 1);
  Advance(absl::Seconds(1));  // past MySQL's retry backoff (100 ms)
  RunOnce();
  EXPECT_EQ(store_->Find("102")->epoch, 1);
  EXPECT_EQ(*store_->Find("102")->time_acked, Now());
  EXPECT_EQ(stats().locked_rows_waiting, 0);
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(stats().locked_rows, 1);
}

TEST_F(LockedRowsTest, ANackOfALockedRowFailsAloneWithAborted) {
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}));
  std::shared_ptr<FakeSubscriber> sub;
  ASSERT_NO_FATAL_FAILURE(SendWith102Locked(sub));
  absl::StatusOr<NackCount> nacked = absl::UnknownError("not called");
  manager_->Nack({.deliveries = {{"103", 0}}, .delay = absl::Seconds(5)},
                 [&](absl::StatusOr<NackCount> r) { nacked = std::move(r); });
  store_->LockRows({"103"});
  RunOnce();
  EXPECT_EQ(nacked.status().code(), absl::StatusCode::kAborted)
      << nacked.status();
  EXPECT_EQ(stats().locked_rows, 2);  // 102 (held back), 103 (the nack)
  EXPECT_EQ(stats().locked_rows_waiting, 1);
}

// An ack that came before its row's postpone cancels the postpone; held
// back by a row lock, it leaves the row due in MySQL until it commits, so
// the lease must not be handed over meanwhile.
TEST_F(LockedRowsTest, AHeldBackAckThatCancelledAPostponeIsNotQuiesced) {
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}));
  PutDue({"101", "102"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102"));
  Complete(*sub);
  auto ack = Ack({"102"});  // before the round that postpones
  store_->LockRows({"102"});
  RunOnce();
  ASSERT_EQ(ack->calls, 1);
  EXPECT_EQ(*ack->result, 0);
  EXPECT_THAT(PostponedIds(store_->writes().back().batch), ElementsAre("101"));
  EXPECT_EQ(store_->Find("102")->epoch, 0);  // still due in MySQL
  EXPECT_EQ(stats().locked_rows_waiting, 1);
  EXPECT_FALSE(manager_->Quiesced());

  store_->UnlockRows();
  Advance(absl::Milliseconds(250));
  RunOnce();
  EXPECT_EQ(*store_->Find("102")->time_acked, Now());
  EXPECT_EQ(stats().locked_rows_waiting, 0);
  EXPECT_TRUE(manager_->Quiesced());
}

TEST_F(LockedRowsTest, TheAckLaneRetriesHeldBackAcks) {
  with_ack_lane_ = true;
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}));
  PutDue({"101", "102"});
  for (const std::string& id : {"101", "102"}) {
    ack_store_->PutDue(id, Now() - kSecond);
  }
  auto sub = Subscribe();
  RunOnce();
  RunOnce();  // the postpones
  ack_store_->LockRows({"102"});
  auto ack = Ack({"101", "102"});
  const absl::Time now = clock_.MonotonicNow();
  EXPECT_EQ(manager_->RunAckRound(), now + absl::Milliseconds(250));
  ASSERT_EQ(ack->calls, 1);
  EXPECT_EQ(*ack->result, 1);
  EXPECT_EQ(stats().locked_rows_waiting, 1);
  EXPECT_EQ(manager_->RunAckRound(), now + absl::Milliseconds(250));
  EXPECT_EQ(ack_store_->write_calls(), 1);  // not due yet
  ack_store_->UnlockRows();
  Advance(absl::Milliseconds(250));
  EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  ASSERT_EQ(ack_store_->write_calls(), 2);
  EXPECT_TRUE(ack_store_->writes().back().batch.expect_locked);
  EXPECT_EQ(*ack_store_->Find("102")->time_acked, Now());
  EXPECT_EQ(stats().locked_rows_waiting, 0);
  EXPECT_EQ(stats().in_flight, 0);
}

}  // namespace
}  // namespace msgq::manager_test
