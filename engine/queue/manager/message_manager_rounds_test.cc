// Unit tests of MessageManager: MySQL outages, purge, stop and binlog row
// changes (fixture in message_manager_fixture.h).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

// ---------------------------------------------------------------------------
// MySQL outages

TEST_F(MessageManagerTest, FailedPollIsRetriedAfterBackoff) {
  ASSERT_NO_FATAL_FAILURE(Init({}, {.retry_min = absl::Milliseconds(100)}));
  PutDue({"101"});
  RunOnce();  // the start-up purge, so that only the poll runs below
  ASSERT_EQ(store_->purge_calls(), 1);
  auto sub = Subscribe();
  store_->FailNext(Op::kPollDue, absl::UnavailableError("down"));
  RunOnce();
  EXPECT_FALSE(stats().mysql_ok);
  EXPECT_EQ(stats().polls, 0);
  EXPECT_THAT(sub->batches, IsEmpty());
  Advance(absl::Milliseconds(50));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  Advance(absl::Milliseconds(50));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

TEST_F(MessageManagerTest, RetryDelayDoublesPerFailedRoundUpToMax) {
  ASSERT_NO_FATAL_FAILURE(Init({}, {.retry_min = absl::Milliseconds(100),
                                    .retry_max = absl::Milliseconds(1000)}));
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  store_->FailAll(absl::UnavailableError("MySQL is down"));
  auto calls = [&] {
    return store_->write_calls() + store_->poll_calls() +
           store_->purge_calls() + store_->next_due_calls();
  };
  const absl::Time failed_at = clock_.Now();
  RunOnce();  // the postpone fails
  ASSERT_EQ(store_->write_calls(), 1);
  // Step the clock by 1ms and note when the manager tries MySQL again.
  std::vector<int64_t> attempts_ms;
  for (int ms = 1; ms <= 4000; ++ms) {
    const int before = calls();
    Advance(absl::Milliseconds(1));
    RunOnce();
    if (calls() > before) {
      attempts_ms.push_back(
          absl::ToInt64Milliseconds(clock_.Now() - failed_at));
    }
  }
  // Delays 100, 200, 400, 800, then 1000 (retry_max) between rounds.
  EXPECT_THAT(attempts_ms, ElementsAre(100, 300, 700, 1500, 2500, 3500));

  store_->Recover();
  Advance(absl::Seconds(2));
  RunOnce();
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(store_->Find("101")->epoch, 1);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

// ---------------------------------------------------------------------------
// Purging

TEST_F(MessageManagerTest, PurgesOldAckedRowsInBatches) {
  ASSERT_NO_FATAL_FAILURE(Init(
      {.purge_after_s = 3600, .poller_interval_s = 3600}, {.purge_batch = 2}));
  const int64_t t0 = Now();
  for (const char* id : {"201", "202", "203", "204", "205"}) {
    store_->PutAcked(id, t0 - 7200 * kSecond);
  }
  store_->PutAcked("206", t0 - 600 * kSecond);  // acked recently
  store_->PutDue("101", t0 - 3 * 3600 * kSecond);
  FakeMessageStore::Row never_due;
  never_due.id = "102";
  never_due.time_next = std::nullopt;
  store_->Put(never_due);

  RunOnce();
  ASSERT_EQ(store_->purge_calls(), 1);
  EXPECT_EQ(store_->purges()[0].cutoff, t0 - 3600 * kSecond);
  EXPECT_EQ(store_->purges()[0].limit, 2);
  EXPECT_EQ(store_->purges()[0].deleted, 2);
  RunOnce();
  RunOnce();
  ASSERT_EQ(store_->purge_calls(), 3);
  EXPECT_EQ(store_->purges()[1].deleted, 2);
  EXPECT_EQ(store_->purges()[2].deleted, 1);
  RunOnce();  // fewer than a batch went: done until the next interval
  EXPECT_EQ(store_->purge_calls(), 3);
  EXPECT_THAT(store_->ids(), UnorderedElementsAre("101", "102", "206"));

  Advance(absl::Seconds(3600));
  RunOnce();
  ASSERT_EQ(store_->purge_calls(), 4);
  EXPECT_EQ(store_->purges()[3].cutoff, t0);
  EXPECT_THAT(store_->ids(), UnorderedElementsAre("101", "102"));
}

TEST_F(MessageManagerTest, FullPurgeBatchThenEmptyOneStops) {
  ASSERT_NO_FATAL_FAILURE(Init({}, {.purge_batch = 2}));
  store_->PutAcked("201", Now() - 7200 * kSecond);
  store_->PutAcked("202", Now() - 7200 * kSecond);
  RunOnce();
  RunOnce();
  RunOnce();
  ASSERT_EQ(store_->purge_calls(), 2);
  EXPECT_EQ(store_->purges()[1].deleted, 0);
}

// ---------------------------------------------------------------------------
// Lifecycle

TEST_F(MessageManagerTest, StopClosesSubscribersAndFailsPendingAcks) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 104));
  auto a = Subscribe();
  auto b = Subscribe();
  RunOnce();
  auto ack = Ack({"101"});
  manager_->Stop(absl::AbortedError("table reloaded"));
  EXPECT_EQ(a->close_calls, 1);
  EXPECT_EQ(a->closed, absl::AbortedError("table reloaded"));
  EXPECT_EQ(b->close_calls, 1);
  EXPECT_EQ(b->closed, absl::AbortedError("table reloaded"));
  EXPECT_EQ(ack->calls, 1);
  EXPECT_EQ(ack->result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(stats().subscribers, 0);

  // Stopping is final.
  auto c = std::make_shared<FakeSubscriber>();
  EXPECT_EQ(manager_->Subscribe(c).code(), absl::StatusCode::kUnavailable);
  auto late = Ack({"102"});
  EXPECT_EQ(late->calls, 1);
  EXPECT_EQ(late->result.status().code(), absl::StatusCode::kUnavailable);
  manager_->OnSendDone(a.get());
  EXPECT_EQ(a->batches.size(), 1u);  // no Send after Close

  manager_->Stop(absl::CancelledError("again"));
  manager_.reset();  // the destructor stops too
  EXPECT_EQ(a->close_calls, 1);
  EXPECT_EQ(b->close_calls, 1);
  EXPECT_EQ(c->close_calls, 0);
  EXPECT_EQ(ack->calls, 1);
}

TEST_F(MessageManagerTest, UnsubscribedSubscriberGetsNothingMore) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 2}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 104));
  auto a = Subscribe();
  auto b = Subscribe();
  RunOnce();
  ASSERT_THAT(a->ids(), ElementsAre("101", "102"));
  ASSERT_THAT(b->ids(), ElementsAre("103", "104"));
  manager_->Unsubscribe(a.get());
  EXPECT_EQ(stats().subscribers, 1);
  manager_->OnSendDone(a.get());  // a late completion is harmless
  CompleteOne(*b);
  RunOnce();  // postpones all four, a's included
  EXPECT_THAT(PostponedIds(store_->writes()[0].batch),
              UnorderedElementsAre("101", "102", "103", "104"));

  // a's messages come back after their time_next, to b.
  Advance(absl::Seconds(60));
  RunOnce();
  Complete(*b);
  EXPECT_THAT(b->ids(), ElementsAre("103", "104", "101", "102", "103", "104"));
  EXPECT_EQ(b->batches[1][0].epoch, 1);
  EXPECT_THAT(a->ids(), ElementsAre("101", "102"));
  EXPECT_EQ(a->close_calls, 0);  // Unsubscribe does not Close
}

TEST_F(MessageManagerTest, LastUnsubscribeStopsPolling) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 60}));
  auto a = Subscribe();
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  manager_->Unsubscribe(a.get());
  PutDue({"101"});
  Advance(absl::Seconds(120));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  auto b = Subscribe();  // the first again: polls at once
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(b->ids(), ElementsAre("101"));
  EXPECT_THAT(a->ids(), IsEmpty());
}

// ---------------------------------------------------------------------------
// Binlog row changes and undelivered batches

RowChange Upsert(const std::string& id, int64_t time_next,
                 int64_t priority = 0) {
  RowChange c;
  c.id = id;
  c.priority = priority;
  c.time_next = time_next;
  return c;
}

TEST_F(MessageManagerTest, BinlogInsertsAreFetchedByIdInOneStatement) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10}));
  auto sub = Subscribe();
  RunOnce();  // the subscribe poll: nothing yet
  ASSERT_EQ(store_->poll_calls(), 1);
  PutDue(Range(101, 103));
  manager_->OnRowChanges({Upsert("101", Now() - kSecond),
                          Upsert("102", Now() - kSecond),
                          Upsert("103", Now() - kSecond)});
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);  // no poll: a fetch by id
  ASSERT_EQ(store_->fetches().size(), 1u);
  EXPECT_THAT(store_->fetches()[0], UnorderedElementsAre("101", "102", "103"));
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102", "103"));
}

TEST_F(MessageManagerTest, BinlogFutureRowIsScheduledNotFetched) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 3600}));
  auto sub = Subscribe();
  RunOnce();
  store_->PutDue("101", Now() + 5 * kSecond);
  manager_->OnRowChanges({Upsert("101", Now() + 5 * kSecond)});
  RunOnce();
  EXPECT_TRUE(store_->fetches().empty());
  EXPECT_EQ(store_->poll_calls(), 1);
  Advance(absl::Seconds(5));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

TEST_F(MessageManagerTest, BinlogAckDeleteAndRescheduleLeaveTheQueue) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 104));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));  // 102..104 queued
  ASSERT_EQ(stats().queued, 3);
  RowChange acked;
  acked.id = "102";
  acked.time_acked = Now();
  RowChange deleted = Upsert("103", Now() - kSecond);
  deleted.deleted = true;
  manager_->OnRowChanges(
      {acked, deleted, Upsert("104", Now() + 3600 * kSecond)});
  EXPECT_EQ(stats().queued, 0);
  // msgq's own postpone of 101 (in flight) is ignored.
  manager_->OnRowChanges({Upsert("101", Now() + 60 * kSecond)});
  EXPECT_EQ(stats().in_flight, 1);
  Complete(*sub);
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
  EXPECT_TRUE(store_->fetches().empty());
}

TEST_F(MessageManagerTest, BinlogChangesWithoutSubscribersFetchNothing) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue(Range(101, 102));
  manager_->OnRowChanges({Upsert("101", Now() - kSecond)});
  RunOnce();
  EXPECT_TRUE(store_->fetches().empty());
  EXPECT_EQ(store_->poll_calls(), 0);
}

TEST_F(MessageManagerTest, UndeliveredBatchGoesToAnotherSubscriberAtOnce) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 2}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 104));
  auto a = Subscribe();
  auto b = Subscribe();
  RunOnce();
  ASSERT_THAT(a->ids(), ElementsAre("101", "102"));
  ASSERT_THAT(b->ids(), ElementsAre("103", "104"));
  // a's stream ends before writing its batch: no postpone is owed for it.
  manager_->Unsubscribe(a.get());
  manager_->OnSendFailed(a.get(), a->batches[0]);
  Complete(*b);
  EXPECT_THAT(b->ids(), ElementsAre("103", "104", "101", "102"));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_THAT(PostponedIds(store_->writes()[0].batch),
              UnorderedElementsAre("101", "102", "103", "104"));
  EXPECT_EQ(stats().sent, 4);
}

TEST_F(MessageManagerTest, BinlogCanTriggerAPollInsteadOfAFetch) {
  MessageManager::Options options;
  options.binlog_fetch_by_id = false;
  ASSERT_NO_FATAL_FAILURE(Init({}, options));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  PutDue(Range(101, 102));
  RowChange c;
  c.id = "101";
  c.time_next = Now() - kSecond;
  manager_->OnRowChanges({c});
  RunOnce();
  EXPECT_TRUE(store_->fetches().empty());
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
}

TEST_F(MessageManagerTest, BinlogRowNotVisibleYetIsFetchedAgainSoon) {
  ASSERT_NO_FATAL_FAILURE(Init());
  auto sub = Subscribe();
  RunOnce();
  // The binlog names 101 before its commit is visible to msgqd's session.
  RowChange c;
  c.id = "101";
  c.time_next = Now() - kSecond;
  manager_->OnRowChanges({c});
  RunOnce();
  ASSERT_EQ(store_->fetches().size(), 1u);
  EXPECT_THAT(sub->ids(), IsEmpty());
  // Now it is visible; the next read comes after 5 ms, not at the poll.
  PutDue({"101"});
  Advance(absl::Milliseconds(4));
  RunOnce();
  EXPECT_EQ(store_->fetches().size(), 1u);
  Advance(absl::Milliseconds(1));
  RunOnce();
  ASSERT_EQ(store_->fetches().size(), 2u);
  EXPECT_THAT(store_->fetches()[1], ElementsAre("101"));
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
  EXPECT_EQ(store_->poll_calls(), 1);
}

TEST_F(MessageManagerTest, BinlogRowNeverFoundIsGivenUpAfterFiveReads) {
  ASSERT_NO_FATAL_FAILURE(Init());
  auto sub = Subscribe();
  RunOnce();
  RowChange c;
  c.id = "101";
  c.time_next = Now() - kSecond;
  manager_->OnRowChanges({c});
  for (int i = 0; i < 20; ++i) {
    RunOnce();
    Advance(absl::Milliseconds(100));
  }
  // One read, then five more (5, 10, 20, 40, 80 ms later), then the poll's.
  EXPECT_EQ(store_->fetches().size(), 6u);
  EXPECT_THAT(sub->ids(), IsEmpty());
}

// A batch handed back while its postpone is being written goes out again at
// once; when that (older) postpone commits, the new send still owes its own
// postpone, so the ids must stay in flight (a poll must not re-add them).
TEST_F(MessageManagerTest, ResentWhilePostponeRunsStaysInFlight) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 2}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 102));
  auto a = Subscribe();
  RunOnce();
  ASSERT_THAT(a->ids(), ElementsAre("101", "102"));
  std::shared_ptr<FakeSubscriber> b;
  store_->before_call = [&](Op op) {
    if (op != Op::kWrite || b != nullptr) return;
    b = Subscribe();
    manager_->Unsubscribe(a.get());
    manager_->OnSendFailed(a.get(), a->batches[0]);
  };
  RunOnce();  // the postpone of the first send commits
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(b->ids(), ElementsAre("101", "102"));
  EXPECT_EQ(stats().in_flight, 2);
  RunOnce();  // the second send's postpone
  EXPECT_EQ(store_->write_calls(), 2);
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(store_->Find("101")->epoch, 2);
}

}  // namespace
}  // namespace msgq::manager_test
