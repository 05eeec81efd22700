// What the manager counts from the binlog: acks it did not write itself
// (Stats::acked_by_sql) and the time from a row's commit, as the binlog
// showed it, to the row's first handoff (Stats::commit_to_send), named rows
// a fetch did not find (Stats::fetch_misses); and how soon in a round a
// binlog-named row is read.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

RowChange AckedRow(const std::string& id, int64_t at, bool newly = true) {
  RowChange c;
  c.id = id;
  c.time_acked = at;
  c.newly_acked = newly;
  return c;
}

RowChange DueRow(const std::string& id, int64_t time_next) {
  RowChange c;
  c.id = id;
  c.time_next = time_next;
  return c;
}

TEST_F(MessageManagerTest, OnlyAcksMsgqDidNotWriteCountAsAckedBySql) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10}));
  PutDue(Range(1, 4));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->batch_ids(), ElementsAre(Range(1, 4)));
  Complete(*sub);

  auto acked = Ack({"1"});
  RunOnce();
  ASSERT_EQ(acked->calls, 1);
  ASSERT_TRUE(acked->result.ok()) << acked->result.status();
  EXPECT_EQ(*acked->result, 1);
  manager_->OnRowChanges({AckedRow("1", Now())});  // msgq's own: the echo
  EXPECT_EQ(stats().acked, 1);
  EXPECT_EQ(stats().acked_by_sql, 0);

  // An application's UPDATE, then another update of the acked row.
  manager_->OnRowChanges({AckedRow("2", Now())});
  manager_->OnRowChanges({AckedRow("2", Now(), /*newly=*/false)});
  EXPECT_EQ(stats().acked_by_sql, 1);
  // The echo of msgq's ack is consumed: a second one is not msgq's.
  manager_->OnRowChanges({AckedRow("1", Now())});
  EXPECT_EQ(stats().acked_by_sql, 2);

  // An ack that failed is not msgq's: the row acked later by SQL counts.
  store_->FailAckGroupsWith("3", absl::InvalidArgumentError("bad"));
  auto failed = Ack({"3"});
  RunOnce();
  ASSERT_EQ(failed->calls, 1);
  EXPECT_EQ(failed->result.status().code(), absl::StatusCode::kInvalidArgument);
  manager_->OnRowChanges({AckedRow("3", Now())});
  EXPECT_EQ(stats().acked_by_sql, 3);
  EXPECT_EQ(stats().acked, 1);
}

TEST_F(MessageManagerTest, CommitToSendIsObservedOnceForBinlogFoundRows) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .ack_wait_s = 1}));
  auto sub = Subscribe();
  RunOnce();  // the subscribe poll: nothing yet
  PutDue({"5"});
  manager_->OnRowChanges({DueRow("5", Now() - kSecond)});
  Advance(absl::Milliseconds(3));
  RunOnce();  // fetched by id and sent, 3 ms after the binlog showed it
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  Complete(*sub);
  MessageManager::Stats s = stats();
  EXPECT_EQ(s.commit_to_send.count, 1);
  EXPECT_EQ(s.commit_to_send.buckets[3], 1);  // (2.5 ms, 5 ms]
  EXPECT_NEAR(s.commit_to_send.sum_seconds, 0.003, 1e-9);

  // Found by a poll (no binlog): a send delay, no commit-to-send.
  PutDue({"6"});
  manager_->RequestPoll();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("5", "6"));
  Complete(*sub);
  EXPECT_EQ(stats().send_delay.count, 2);
  EXPECT_EQ(stats().commit_to_send.count, 1);

  // A rescheduled row found on the binlog is on time, not "from commit".
  manager_->OnRowChanges({DueRow("9", Now() + 60 * kSecond)});
  // Redelivery after the ack wait (5's postpone was written in the round
  // that polled 6; 6's is written now): the first handoff only.
  Advance(absl::Seconds(30));
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("5", "6", "5"));
  EXPECT_EQ(stats().commit_to_send.count, 1);
}

// The round's write ends with a durable commit; a row the binlog named is
// read and handed to its subscriber before it, not after.
TEST_F(MessageManagerTest, ABinlogNamedRowIsSentBeforeTheRoundsWrite) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .ack_wait_s = 30}));
  auto sub = Subscribe();
  PutDue({"1"});
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("1"));
  Complete(*sub);  // its postpone is owed to the next round's write
  PutDue({"2"});
  manager_->OnRowChanges({DueRow("2", Now() - kSecond)});
  std::vector<Op> ops;
  std::vector<std::string> sent_at_write;
  store_->before_call = [&](Op op) {
    if (op != Op::kFetchDue && op != Op::kWrite) return;
    ops.push_back(op);
    if (op == Op::kWrite) sent_at_write = sub->ids();
  };
  RunOnce();
  store_->before_call = nullptr;
  EXPECT_THAT(ops, ElementsAre(Op::kFetchDue, Op::kWrite));
  EXPECT_THAT(sent_at_write, ElementsAre("1", "2"));
  EXPECT_EQ(store_->Find("1")->epoch, 1);  // the write still ran
}

// A fetch that finds MySQL gone does not drop what the round took: the ack
// taken with it is written and answered, and the named row is found by the
// poll that follows.
TEST_F(MessageManagerTest, AFailedFetchStillWritesTheRoundsAcks) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .ack_wait_s = 30},
                               {.retry_min = absl::Milliseconds(100)}));
  auto sub = Subscribe();
  PutDue({"1"});
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("1"));
  Complete(*sub);
  auto acked = Ack({"1"});
  PutDue({"2"});
  manager_->OnRowChanges({DueRow("2", Now() - kSecond)});
  store_->FailNext(Op::kFetchDue, absl::UnavailableError("down"));
  RunOnce();
  ASSERT_EQ(acked->calls, 1);
  EXPECT_EQ(acked->result, absl::StatusOr<int64_t>(1));
  EXPECT_TRUE(store_->Find("1")->time_acked.has_value());
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  Advance(absl::Seconds(1));
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2"));
}

// A named row that the fetch does not find yet is a miss, read again after
// the refetch delay (5 ms): found then, it is no second miss.
TEST_F(MessageManagerTest, ANamedRowNotVisibleYetIsCountedAsAFetchMiss) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10}));
  auto sub = Subscribe();
  RunOnce();  // the subscribe poll: nothing yet
  manager_->OnRowChanges({DueRow("7", Now() - kSecond)});
  RunOnce();  // not in the store yet: the commit is not visible
  EXPECT_EQ(stats().fetches, 1);
  EXPECT_EQ(stats().fetch_misses, 1);
  EXPECT_THAT(sub->ids(), IsEmpty());
  PutDue({"7"});
  Advance(absl::Milliseconds(5));
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("7"));
  EXPECT_EQ(stats().fetches, 2);
  EXPECT_EQ(stats().fetch_misses, 1);
}

}  // namespace
}  // namespace msgq::manager_test
