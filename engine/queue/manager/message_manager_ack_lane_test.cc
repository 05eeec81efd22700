// MessageManager's ack lane (message_manager_ack_lane.cc): acks written by
// rounds of their own on a second store, and what keeps that safe.
#include <memory>
#include <string>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class AckLaneTest : public MessageManagerTest {
 protected:
  AckLaneTest() { with_ack_lane_ = true; }

  // 101 is sent to a new subscriber, which wrote it, and its postpone
  // commits: 101 is no longer in flight.
  void SendAndSettle101(std::shared_ptr<FakeSubscriber>& sub) {
    PutDueBoth({"101"});
    sub = Subscribe();
    RunOnce();
    ASSERT_THAT(sub->ids(), ElementsAre("101"));
    Complete(*sub);
    RunOnce();
    ASSERT_EQ(stats().in_flight, 0);
  }

  // Due in both fakes (the lane's writes go to ack_store_).
  void PutDueBoth(const std::vector<std::string>& ids) {
    PutDue(ids);
    for (const std::string& id : ids) {
      ack_store_->PutDue(id, Now() - kSecond);
    }
  }
};

TEST_F(AckLaneTest, AcksGoToTheLaneAndNotToTheTablesRound) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDueBoth({"101", "102"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102"));
  RunOnce();  // the postpones
  ASSERT_EQ(store_->write_calls(), 1);
  auto ack = Ack({"101", "102"});
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 1);  // the table's round took no ack
  EXPECT_EQ(ack->calls, 0);
  EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  ASSERT_EQ(ack_store_->write_calls(), 1);
  const WriteBatch& batch = ack_store_->writes()[0].batch;
  EXPECT_THAT(batch.ack_groups,
              ElementsAre(std::vector<std::string>{"101", "102"}));
  EXPECT_THAT(batch.postpones, IsEmpty());
  EXPECT_EQ(batch.now, Now());
  EXPECT_EQ(ack->calls, 1);
  ASSERT_TRUE(ack->result.ok()) << ack->result.status();
  EXPECT_EQ(*ack->result, 2);
  EXPECT_EQ(stats().acked, 2);
  EXPECT_EQ(stats().in_flight, 0);
  // Nothing waiting: the lane writes nothing.
  EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  EXPECT_EQ(ack_store_->write_calls(), 1);
}

// The table's round polls while the lane's ack of a delivered row commits
// and settles: the poll read the row from before the ack, and must not
// queue it (it would be sent again although acked).
TEST_F(AckLaneTest, ARowAckedWhileAPollRunsIsNotQueuedFromThatPoll) {
  ASSERT_NO_FATAL_FAILURE(Init());
  std::shared_ptr<FakeSubscriber> sub;
  ASSERT_NO_FATAL_FAILURE(SendAndSettle101(sub));
  // The poll's snapshot is from before the ack: 101 still due.
  store_->PutDue("101", Now() - kSecond, 0, /*epoch=*/1);
  std::shared_ptr<AckOutcome> ack;
  store_->before_call = [&](Op op) {
    if (op != Op::kPollDue || ack != nullptr) return;
    ack = Ack({"101"});
    EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  };
  manager_->RequestPoll();
  RunOnce();
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->calls, 1);
  ASSERT_TRUE(ack->result.ok()) << ack->result.status();
  EXPECT_EQ(*ack->result, 1);
  ASSERT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(store_->polls()[1].ids, ElementsAre("101"));
  EXPECT_EQ(stats().queued, 0);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));  // not sent again
  // A later poll that shows it due again (it is not: it is acked) is a
  // read like any other: only reads that overlapped the ack are dropped.
  store_->before_call = nullptr;
  manager_->RequestPoll();
  RunOnce();
  EXPECT_EQ(stats().queued + static_cast<int64_t>(sub->ids().size()), 2);
}

// A poll that hit its limit is a backlog even when rows of it were dropped
// as stale: without that, the table would wait for its next interval poll.
TEST_F(AckLaneTest, APollAtItsLimitIsABacklogEvenIfStaleRowsWereDropped) {
  ASSERT_NO_FATAL_FAILURE(Init({.cache_size = 1}));
  std::shared_ptr<FakeSubscriber> sub;
  ASSERT_NO_FATAL_FAILURE(SendAndSettle101(sub));
  // The next poll (limit 1) reads 101 from before its ack; 102 is behind.
  store_->PutDue("101", Now() - 2 * kSecond, 0, /*epoch=*/1);
  store_->PutDue("102", Now() - kSecond);
  std::shared_ptr<AckOutcome> ack;
  store_->before_call = [&](Op op) {
    if (op != Op::kPollDue || ack != nullptr) return;
    ack = Ack({"101"});
    manager_->RunAckRound();
  };
  manager_->RequestPoll();
  const int polls = store_->poll_calls();
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), polls + 1);
  EXPECT_THAT(store_->polls().back().ids, ElementsAre("101"));
  ASSERT_NE(ack, nullptr);
  EXPECT_EQ(ack->calls, 1);
  store_->before_call = nullptr;
  store_->PutAcked("101", Now());  // as MySQL holds it once acked
  RunOnce();  // a backlog: the next round polls again at once
  ASSERT_EQ(store_->poll_calls(), polls + 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
}

TEST_F(AckLaneTest, TheLaneWaitsOutMySqlsRetryBackoff) {
  ASSERT_NO_FATAL_FAILURE(Init());
  auto ack = Ack({"7"});  // accepted while MySQL is fine
  store_->FailNext(Op::kPollDue, absl::UnavailableError("gone"));
  auto sub = Subscribe();
  RunOnce();  // the poll fails: retry after retry_min (100 ms, no jitter)
  ASSERT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(store_->write_calls(), 0);
  const absl::Time retry_at = clock_.MonotonicNow() + absl::Milliseconds(100);
  EXPECT_EQ(manager_->RunAckRound(), retry_at);
  EXPECT_EQ(ack_store_->write_calls(), 0);
  EXPECT_EQ(ack->calls, 0);
  Advance(absl::Milliseconds(100));
  EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  EXPECT_EQ(ack_store_->write_calls(), 1);
  ASSERT_EQ(ack->calls, 1);
  ASSERT_TRUE(ack->result.ok()) << ack->result.status();
  EXPECT_EQ(*ack->result, 0);  // no such row
}

// A lost connection on the lane fails its acks with UNAVAILABLE (the client
// retries) and marks MySQL down for the table, as a round's failure does:
// new acks are refused at once until a round reaches MySQL again.
TEST_F(AckLaneTest, ALostConnectionFailsTheLanesAcksWithUnavailable) {
  ASSERT_NO_FATAL_FAILURE(Init());
  ack_store_->FailNext(Op::kWrite, absl::UnavailableError("lost"));
  auto ack = Ack({"7"});
  EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  ASSERT_EQ(ack->calls, 1);
  EXPECT_EQ(ack->result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ack->result.status().message(),
            "ack on table `db`.`queue` failed: lost");
  auto again = Ack({"7"});
  ASSERT_EQ(again->calls, 1);
  EXPECT_EQ(again->result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(again->result.status().message(),
            "MySQL is unavailable for table `db`.`queue`: retry");
  EXPECT_EQ(manager_->RunAckRound(), absl::InfiniteFuture());
  EXPECT_EQ(ack_store_->write_calls(), 1);
}

}  // namespace
}  // namespace msgq::manager_test
