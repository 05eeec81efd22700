// MessageManager in the edge cases a hardening review found (hand-backs,
// failed sends, clock steps, rows the binlog names before they are visible,
// ack groups that fail), each pinned by a test.
#include <memory>
#include <string>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// `n` commits after `at`: a change the store's reads do not see yet.
BinlogPosition After(BinlogPosition at, uint64_t n) {
  at.offset += n;
  return at;
}

// A stream that is ending: every batch offered to it fails at once, from
// inside Send, as StreamSink::EnqueueBatch does after a finish request.
class EndingSubscriber final : public Subscriber {
 public:
  explicit EndingSubscriber(MessageManager** manager) : manager_(manager) {}
  void Send(uint64_t, MessageBatch batch) override {
    ++sends;
    if (sends > 50) return;  // re-offering to it would recurse without end
    (*manager_)->OnSendFailed(this, std::move(batch));
  }
  void Close(absl::Status) override {}
  int sends = 0;

 private:
  MessageManager** manager_;
};

// A batch that was never written goes to another subscriber at once,
// also when its postpone has already committed.
TEST_F(MessageManagerTest, HandedBackAfterItsPostponeCommittedIsSentAtOnce) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 2}));
  PutDue(Range(101, 102));
  auto a = Subscribe();
  RunOnce();  // polls, sends both to a
  ASSERT_THAT(a->ids(), ElementsAre("101", "102"));
  RunOnce();  // their postpones commit
  ASSERT_EQ(store_->write_calls(), 1);
  ASSERT_EQ(stats().in_flight, 0);
  // a's stream is cancelled with both batches unwritten.
  auto b = Subscribe();
  manager_->Unsubscribe(a.get());
  manager_->OnSendFailed(a.get(), a->batches[0]);
  manager_->OnSendFailed(a.get(), a->batches[1]);
  EXPECT_THAT(b->ids(), ElementsAre("101", "102"));
  EXPECT_EQ(stats().sent, 2);
}

// ... but not past its ack wait: then MySQL has it due again and the poll
// owns it (it may have been sent to someone else already).
TEST_F(MessageManagerTest, HandedBackPastItsAckWaitIsLeftToThePoll) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1, .ack_wait_s = 30}));
  PutDue({"101"});
  auto a = Subscribe();
  RunOnce();
  RunOnce();
  ASSERT_THAT(a->ids(), ElementsAre("101"));
  Advance(absl::Seconds(30));
  auto b = Subscribe();
  manager_->Unsubscribe(a.get());
  manager_->OnSendFailed(a.get(), a->batches[0]);
  EXPECT_THAT(b->ids(), IsEmpty());
}

// A subscriber whose send failed is never offered another batch, even before
// it unsubscribes.
TEST_F(MessageManagerTest, FailedSendRemovesTheSubscriberAtOnce) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 103));
  MessageManager* manager = nullptr;
  auto ending = std::make_shared<EndingSubscriber>(&manager);
  manager = manager_.get();
  ASSERT_TRUE(manager_->Subscribe(ending).ok());
  auto b = Subscribe();
  RunOnce();
  EXPECT_EQ(ending->sends, 1);
  EXPECT_THAT(b->ids(), ElementsAre("102"));
  EXPECT_EQ(stats().subscribers, 1);
  Complete(*b);
  EXPECT_THAT(b->ids(), ElementsAre("102", "101", "103"));
}

// Intervals run on the monotonic clock: a wall clock stepped back does not
// stall the poll.
TEST_F(MessageManagerTest, WallClockSteppedBackDoesNotStallThePoll) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 30}));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  clock_.Set(clock_.Now() - absl::Hours(1));
  PutDue({"101"});
  Advance(absl::Seconds(30));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

// A poll that starts while binlog-named rows are not visible yet does not
// drop them: they are fetched in the next round, not at the interval.
TEST_F(MessageManagerTest, PollDoesNotDropRowsTheBinlogNamed) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 30}));
  auto sub = Subscribe();
  RunOnce();
  RowChange c;
  c.id = "101";
  c.time_next = Now() - kSecond;
  manager_->OnRowChanges({c});
  manager_->RequestPoll();  // e.g. the binlog stream restarted
  RunOnce();                // polls; 101 is not visible to it yet
  ASSERT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(store_->fetches(), IsEmpty());
  PutDue({"101"});
  RunOnce();
  ASSERT_EQ(store_->fetches().size(), 1u);
  EXPECT_THAT(store_->fetches()[0], ElementsAre("101"));
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

// A named row never found by its reads gets one poll, not the interval.
TEST_F(MessageManagerTest, FetchThatGivesUpRequestsAPoll) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 3600}));
  auto sub = Subscribe();
  RunOnce();
  RowChange c;
  c.id = "101";
  c.time_next = Now() - kSecond;
  manager_->OnRowChanges({c});
  for (int i = 0; i < 10; ++i) {
    RunOnce();
    Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(store_->fetches().size(), 6u);
  EXPECT_EQ(store_->poll_calls(), 2);
}

// Ids waiting for their ack statement are bounded, not only requests.
TEST_F(MessageManagerTest, WaitingAckIdsAreBounded) {
  MessageManager::Options options;
  options.max_pending_ack_ids = 5;
  ASSERT_NO_FATAL_FAILURE(Init({}, options));
  auto first = Ack(Range(1, 4));
  auto second = Ack(Range(5, 6));
  EXPECT_EQ(first->calls, 0);
  ASSERT_EQ(second->calls, 1);
  EXPECT_EQ(second->result.status().code(),
            absl::StatusCode::kResourceExhausted);
  RunOnce();
  EXPECT_EQ(first->calls, 1);
  auto third = Ack(Range(5, 9));
  EXPECT_EQ(third->calls, 0);  // accepted: the first ones were written
}

// One ack group that fails for good fails alone: the other client's ack in
// the same round commits, and MySQL is not marked down.
TEST_F(MessageManagerTest, PermanentlyFailingAckGroupFailsAlone) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue(Range(101, 103));
  store_->FailAckGroupsWith("102", absl::InvalidArgumentError("too large"));
  auto good = Ack({"101"});
  auto bad = Ack({"102", "103"});
  RunOnce();
  ASSERT_EQ(good->calls, 1);
  ASSERT_TRUE(good->result.ok()) << good->result.status();
  EXPECT_EQ(*good->result, 1);
  ASSERT_EQ(bad->calls, 1);
  EXPECT_EQ(bad->result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(stats().in_flight, 0);  // the failed group's ids are not held
  EXPECT_EQ(stats().acked, 1);
}

// The counters /metrics shows: sends with epoch > 0 are redeliveries, every
// postponed row and every statement's latency is counted.
TEST_F(MessageManagerTest, StatsCountRedeliveriesPostponesAndStatements) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .ack_wait_s = 30}));
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();  // poll, send 3
  Complete(*sub);
  RunOnce();  // postpone 3
  MessageManager::Stats s = stats();
  EXPECT_EQ(s.sent, 3);
  EXPECT_EQ(s.redelivered, 0);
  EXPECT_EQ(s.postponed, 3);
  EXPECT_EQ(s.polls, 1);
  EXPECT_EQ(s.poll_latency.count, 1);
  EXPECT_EQ(s.write_latency.count, 1);
  // The fake clock does not move during a statement.
  EXPECT_EQ(s.poll_latency.buckets[0], 1);
  EXPECT_EQ(s.poll_latency.sum_seconds, 0);
  // Each was due 1 s before it was sent.
  EXPECT_EQ(s.send_delay.count, 3);
  EXPECT_EQ(s.send_delay.sum_seconds, 3);
  EXPECT_EQ(s.send_delay.buckets[10], 3);  // (0.5 s, 1 s]

  Advance(absl::Seconds(60));
  RunOnce();  // poll, send the 3 again with epoch 1
  Complete(*sub);
  auto acked = Ack({"101"});
  RunOnce();  // ack 101 (no postpone for it), postpone 102 and 103
  ASSERT_EQ(acked->calls, 1);
  s = stats();
  EXPECT_EQ(s.sent, 6);
  EXPECT_EQ(s.redelivered, 3);
  EXPECT_EQ(s.postponed, 5);
  EXPECT_EQ(s.acked, 1);
  EXPECT_EQ(s.polls, 2);
  EXPECT_EQ(s.fetches, 0);
}

// The binlog can run ahead of InnoDB's commit: a read right after an
// UPDATE's event may still show the row as it was (its position is before
// the UPDATE's). Such a read must not be queued: it is read again until it
// shows what the binlog said.
TEST_F(MessageManagerTest, AReadOlderThanTheBinlogIsReadAgain) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 3600}));
  auto sub = Subscribe();
  RunOnce();
  store_->PutDue("101", Now() - kSecond, /*priority=*/50);
  RowChange c;
  c.id = "101";
  c.priority = 0;  // the UPDATE's after image
  c.time_next = Now() - kSecond;
  c.position = After(store_->position(), 1);  // not visible to reads yet
  manager_->OnRowChanges({c});
  RunOnce();  // the fetch still sees priority 50
  ASSERT_EQ(store_->fetches().size(), 1u);
  EXPECT_THAT(sub->ids(), IsEmpty());
  EXPECT_EQ(stats().queued, 0);
  store_->PutDue("101", Now() - kSecond, /*priority=*/0);  // now visible
  Advance(absl::Milliseconds(5));
  RunOnce();
  ASSERT_EQ(store_->fetches().size(), 2u);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

// An application moved a row later (or acked it) by SQL; a poll that began
// before that commit was visible still shows it due: it is not sent early
// (or again).
TEST_F(MessageManagerTest, APollOlderThanTheBinlogSendsNothingEarly) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 3600}));
  auto sub = Subscribe();
  RunOnce();
  store_->PutDue("101", Now() - kSecond);
  store_->PutDue("102", Now() - kSecond);
  RowChange later;
  later.id = "101";
  later.time_next = Now() + 60 * kSecond;
  RowChange acked;
  acked.id = "102";
  acked.time_next = std::nullopt;
  acked.time_acked = Now();
  acked.newly_acked = true;
  // Committed after what reads see now.
  later.position = After(store_->position(), 1);
  acked.position = After(store_->position(), 2);
  manager_->OnRowChanges({later, acked});
  manager_->RequestPoll();
  RunOnce();  // the poll shows both rows as they were: due
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), IsEmpty());
  EXPECT_EQ(stats().queued, 0);
  // The commits become visible; 101 is sent at its new time, 102 never.
  store_->PutDue("101", Now() + 60 * kSecond);
  store_->PutAcked("102", Now());
  Advance(absl::Seconds(60));
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

// A batch handed back after its postpone committed is queued again at once;
// the binlog's echo of that postpone (read after the id left flight) is
// msgq's own write, not an application's reschedule, and must not take it
// out of the queue (the batch would then stall until its ack wait ran out).
TEST_F(MessageManagerTest, TheEchoOfItsOwnPostponeKeepsAHandedBackBatchQueued) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 1}));
  PutDue({"101"});
  auto a = Subscribe();
  RunOnce();
  ASSERT_THAT(a->ids(), ElementsAre("101"));
  RunOnce();  // the postpone commits: 101 leaves flight
  ASSERT_EQ(store_->write_calls(), 1);
  ASSERT_EQ(store_->writes()[0].batch.postpones.size(), 1u);
  const int64_t postponed = store_->writes()[0].batch.postpones[0].time_next;
  EXPECT_EQ(stats().in_flight, 0);
  manager_->Unsubscribe(a.get());
  manager_->OnSendFailed(a.get(), a->batches[0]);  // never written
  EXPECT_EQ(stats().queued, 1);
  RowChange echo;
  echo.id = "101";
  echo.time_next = postponed;
  manager_->OnRowChanges({echo});
  EXPECT_EQ(stats().queued, 1);
  auto b = Subscribe();
  EXPECT_THAT(b->ids(), ElementsAre("101"));
  // An application's reschedule of a queued row still takes it out.
  store_->PutDue("102", Now() - kSecond);
  manager_->RequestPoll();
  RunOnce();
  ASSERT_EQ(stats().queued, 1);
  RowChange later;
  later.id = "102";
  later.time_next = Now() + 60 * kSecond;
  manager_->OnRowChanges({later});
  EXPECT_EQ(stats().queued, 0);
}

// A batch handed back is queued again from memory, not read again: a row
// the binlog showed deleted, or acked by SQL, while its batch waited
// unwritten is gone and must not be sent to anyone else.
TEST_F(MessageManagerTest, AHandedBackRowTheBinlogShowedGoneIsNotQueuedAgain) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 3}, {.max_batches_per_subscriber = 1}));
  PutDue({"101", "102", "103"});
  auto a = Subscribe();
  RunOnce();
  ASSERT_THAT(a->ids(), ElementsAre("101", "102", "103"));
  RowChange deleted;
  deleted.id = "101";
  deleted.deleted = true;
  RowChange acked;
  acked.id = "102";
  acked.time_next = Now();
  acked.time_acked = Now();
  acked.newly_acked = true;
  manager_->OnRowChanges({deleted, acked});
  manager_->Unsubscribe(a.get());
  manager_->OnSendFailed(a.get(), a->batches[0]);  // never written
  EXPECT_EQ(stats().queued, 1);
  auto b = Subscribe();
  EXPECT_THAT(b->ids(), ElementsAre("103"));
}

}  // namespace
}  // namespace msgq::manager_test
