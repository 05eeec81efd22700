// Unit tests of MessageManager: redelivery, scheduling and acks (fixture in
// message_manager_fixture.h).
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
// Redelivery and scheduling

TEST_F(MessageManagerTest, RedeliversAtTimeNextWithoutWaitingForTheInterval) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 10, .ack_wait_s = 30, .poller_interval_s = 3600}));
  const int64_t t0 = Now();
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  Complete(*sub);
  RunOnce();  // postpone to t0 + 60s
  ASSERT_EQ(*store_->Find("101")->time_next, t0 + 60 * kSecond);

  Advance(absl::Seconds(59));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(sub->batches.size(), 1u);

  Advance(absl::Seconds(1));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  ASSERT_EQ(sub->batches.size(), 2u);
  ASSERT_EQ(sub->batches[1].size(), 1u);
  EXPECT_EQ(sub->batches[1][0].id, "101");
  EXPECT_EQ(sub->batches[1][0].epoch, 1);
  EXPECT_EQ(sub->batches[1][0].time_next, t0 + 60 * kSecond);

  // The second postpone backs off further: 30 + 30 * 2^1.
  RunOnce();
  EXPECT_EQ(store_->Find("101")->epoch, 2);
  EXPECT_EQ(*store_->Find("101")->time_next, Now() + 90 * kSecond);
}

TEST_F(MessageManagerTest, FutureMessageIsSentWhenItBecomesDue) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 3600}));
  const int64_t t0 = Now();
  store_->PutDue("101", t0 + 5 * kSecond);
  store_->PutDue("102", t0 + 7200 * kSecond);
  auto sub = Subscribe();
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_THAT(store_->polls()[0].ids, IsEmpty());
  EXPECT_EQ(store_->next_due_calls(), 1);
  EXPECT_THAT(sub->batches, IsEmpty());

  Advance(absl::Seconds(4));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);

  Advance(absl::Seconds(1));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

TEST_F(MessageManagerTest, NoteDueAtSchedulesAPoll) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 3600}));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  // A row committed after the poll (as the binlog would report it).
  store_->PutDue("101", Now() + 2 * kSecond);
  manager_->NoteDueAt(Now() + 2 * kSecond);
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  Advance(absl::Seconds(2));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

TEST_F(MessageManagerTest, CacheStaysBoundedAndDrainingTriggersPolls) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 5, .cache_size = 10, .poller_interval_s = 3600}));
  PutDue(Range(101, 135));
  auto sub = Subscribe();
  int64_t max_queued = 0;
  for (int round = 0; round < 20 && sub->ids().size() < 35; ++round) {
    RunOnce();
    max_queued = std::max(max_queued, stats().queued);
    while (sub->completed < sub->batches.size()) {
      CompleteOne(*sub);
      max_queued = std::max(max_queued, stats().queued);
    }
  }
  EXPECT_THAT(sub->ids(), ElementsAreArray(Range(101, 135)));
  for (const MessageBatch& b : sub->batches) EXPECT_EQ(b.size(), 5u);
  EXPECT_LE(max_queued, 10);
  EXPECT_EQ(clock_.Now(), Start());  // never waited for poller_interval
  EXPECT_LE(store_->poll_calls(), 5);
  for (const FakeMessageStore::PollCall& p : store_->polls()) {
    EXPECT_LE(p.ids.size(), 20u);
  }
  RunOnce();  // the last postpone
  EXPECT_EQ(stats().in_flight, 0);
  for (const std::string& id : Range(101, 135)) {
    EXPECT_EQ(store_->Find(id)->epoch, 1) << id;
  }
}

// ---------------------------------------------------------------------------
// Acking

TEST_F(MessageManagerTest, AckWritesOneGroupPerRequestAndCountsRows) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2}));
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();
  RunOnce();  // postpone
  ASSERT_EQ(store_->write_calls(), 1);

  Advance(absl::Seconds(3));
  auto a = Ack({"101", "102"});
  auto b = Ack({"101", "999"});   // 101 acked by `a` first; 999 unknown
  auto c = Ack({"0103", "103"});  // same row twice
  EXPECT_EQ(a->calls, 0);
  EXPECT_EQ(stats().in_flight, 4);  // 101, 102, 103, 999 being acked

  RunOnce();
  ASSERT_EQ(store_->write_calls(), 2);
  const WriteBatch& w = store_->writes()[1].batch;
  EXPECT_EQ(w.now, Now());
  EXPECT_THAT(w.postpones, IsEmpty());
  EXPECT_THAT(w.ack_groups,
              ElementsAre(ElementsAre("101", "102"), ElementsAre("101", "999"),
                          ElementsAre("103", "103")));
  EXPECT_EQ(a->calls, 1);
  EXPECT_EQ(b->calls, 1);
  EXPECT_EQ(c->calls, 1);
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(2));
  EXPECT_EQ(b->result, absl::StatusOr<int64_t>(0));
  EXPECT_EQ(c->result, absl::StatusOr<int64_t>(1));
  EXPECT_EQ(stats().acked, 3);
  EXPECT_EQ(stats().in_flight, 0);
  for (const std::string& id : Range(101, 103)) {
    EXPECT_EQ(store_->Find(id)->time_acked, Now()) << id;
    EXPECT_FALSE(store_->Find(id)->time_next.has_value()) << id;
  }

  // Acking again counts nothing.
  auto again = Ack({"101"});
  RunOnce();
  EXPECT_EQ(again->result, absl::StatusOr<int64_t>(0));
}

TEST_F(MessageManagerTest, AckOfQueuedMessageMeansItIsNeverSent) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  ASSERT_EQ(stats().queued, 2);

  auto a = Ack({"102"});
  EXPECT_EQ(stats().queued, 1);
  CompleteOne(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "103"));

  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  const WriteBatch& w = store_->writes()[0].batch;
  EXPECT_THAT(PostponedIds(w), UnorderedElementsAre("101", "103"));
  EXPECT_THAT(w.ack_groups, ElementsAre(ElementsAre("102")));
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
  EXPECT_EQ(store_->Find("102")->epoch, 0);

  // Redelivery brings back the two others, never 102.
  Complete(*sub);
  Advance(absl::Seconds(60));
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "103", "101", "103"));
}

TEST_F(MessageManagerTest, AckBeforeThePollKeepsTheMessageFromBeingSent) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101", "102"});
  auto sub = Subscribe();
  auto a = Ack({"101"});
  RunOnce();  // the ack commits before the poll
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
  EXPECT_THAT(sub->ids(), ElementsAre("102"));
}

TEST_F(MessageManagerTest, AckCancelsThePendingPostpone) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2}));
  PutDue({"101", "102"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102"));
  auto a = Ack({"101"});
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  const WriteBatch& w = store_->writes()[0].batch;
  EXPECT_THAT(PostponedIds(w), ElementsAre("102"));
  EXPECT_THAT(w.ack_groups, ElementsAre(ElementsAre("101")));
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
  EXPECT_EQ(store_->Find("101")->epoch, 0);
  EXPECT_EQ(store_->Find("101")->time_acked, Now());
  EXPECT_EQ(store_->Find("102")->epoch, 1);
  EXPECT_EQ(stats().in_flight, 0);
}

TEST_F(MessageManagerTest, AckFailureReportsUnavailableAndRestoresPostpone) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 2}, {.retry_min = absl::Milliseconds(100)}));
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  auto a = Ack({"101"});
  store_->FailNext(Op::kWrite, absl::UnavailableError("MySQL went away"));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_THAT(store_->writes()[0].batch.postpones, IsEmpty());
  EXPECT_EQ(a->calls, 1);
  EXPECT_EQ(a->result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(stats().in_flight, 1);  // still sent and unsettled
  EXPECT_EQ(stats().acked, 0);

  // While MySQL is down, acks are refused at once.
  auto refused = Ack({"101"});
  EXPECT_EQ(refused->calls, 1);
  EXPECT_EQ(refused->result.status().code(), absl::StatusCode::kUnavailable);

  Advance(absl::Milliseconds(100));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 2);
  const WriteBatch& w = store_->writes()[1].batch;
  EXPECT_THAT(PostponedIds(w), ElementsAre("101"));
  EXPECT_THAT(w.ack_groups, IsEmpty());
  EXPECT_EQ(w.postpones[0].time_next, Now() + 60 * kSecond);
  EXPECT_EQ(store_->Find("101")->epoch, 1);
  EXPECT_FALSE(store_->Find("101")->time_acked.has_value());
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));  // not re-sent meanwhile
}

TEST_F(MessageManagerTest, AckOfQueuedMessageThatFailsIsSentLater) {
  ASSERT_NO_FATAL_FAILURE(Init(
      {.batch_size = 1},
      {.max_batches_per_subscriber = 1, .retry_min = absl::Milliseconds(100)}));
  PutDue({"101", "102"});
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101"));
  auto a = Ack({"102"});  // queued
  store_->FailNext(Op::kWrite, absl::UnavailableError("down"));
  RunOnce();
  EXPECT_EQ(a->result.status().code(), absl::StatusCode::kUnavailable);
  Advance(absl::Milliseconds(100));
  RunOnce();  // postpones 101, re-polls: 102 is due again
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
}

TEST_F(MessageManagerTest, MalformedAckIsInvalidArgumentAtOnce) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101"});
  auto bad = Ack({"101", "abc"});
  EXPECT_EQ(bad->calls, 1);
  EXPECT_EQ(bad->result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad->result.status().message(), HasSubstr("abc"));
  auto empty_id = Ack({""});
  EXPECT_EQ(empty_id->result.status().code(),
            absl::StatusCode::kInvalidArgument);
  auto none = Ack({});
  EXPECT_EQ(none->calls, 1);
  EXPECT_EQ(none->result, absl::StatusOr<int64_t>(0));
  EXPECT_EQ(stats().in_flight, 0);  // nothing of a rejected request kept
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 0);
  EXPECT_FALSE(store_->Find("101")->time_acked.has_value());
}

TEST_F(MessageManagerTest, AckCanonicalizesIntegerIds) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101"});
  auto a = Ack({"00101"});
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_THAT(store_->writes()[0].batch.ack_groups,
              ElementsAre(ElementsAre("101")));
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
}

TEST_F(MessageManagerTest, AckLimits) {
  ASSERT_NO_FATAL_FAILURE(
      Init({}, {.max_pending_acks = 1, .max_ids_per_ack = 2}));
  auto too_many = Ack({"1", "2", "3"});
  EXPECT_EQ(too_many->calls, 1);
  EXPECT_EQ(too_many->result.status().code(),
            absl::StatusCode::kInvalidArgument);

  auto first = Ack({"1", "2"});
  EXPECT_EQ(first->calls, 0);
  auto second = Ack({"3"});
  EXPECT_EQ(second->calls, 1);
  EXPECT_EQ(second->result.status().code(),
            absl::StatusCode::kResourceExhausted);

  RunOnce();
  EXPECT_EQ(first->result, absl::StatusOr<int64_t>(0));
  auto third = Ack({"3"});
  EXPECT_EQ(third->calls, 0);  // room again
  RunOnce();
  EXPECT_EQ(third->calls, 1);
}

TEST_F(MessageManagerTest, AckOfUnknownIdIsInFlightOnlyUntilCommitted) {
  ASSERT_NO_FATAL_FAILURE(Init());
  auto a = Ack({"555"});
  EXPECT_EQ(stats().in_flight, 1);
  RunOnce();
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(0));
  EXPECT_EQ(stats().in_flight, 0);
}

TEST_F(MessageManagerTest, AckArrivingDuringThePostponeWriteWins) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  std::shared_ptr<AckOutcome> a;
  store_->before_call = [&](Op op) {
    if (op == Op::kWrite && a == nullptr) a = Ack({"101"});
  };
  RunOnce();  // the postpone commits while the ack waits
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->calls, 0);
  EXPECT_EQ(store_->Find("101")->epoch, 1);
  EXPECT_EQ(stats().in_flight, 1);  // still: its ack has not committed

  Advance(absl::Seconds(60));  // due again in MySQL; the ack is next
  RunOnce();
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
  EXPECT_EQ(stats().in_flight, 0);
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

TEST_F(MessageManagerTest, AckArrivingDuringAFailedPostponeIsStillApplied) {
  ASSERT_NO_FATAL_FAILURE(Init({}, {.retry_min = absl::Milliseconds(100)}));
  PutDue({"101"});
  auto sub = Subscribe();
  RunOnce();
  std::shared_ptr<AckOutcome> a;
  store_->before_call = [&](Op op) {
    if (op == Op::kWrite && a == nullptr) a = Ack({"101"});
  };
  store_->FailNext(Op::kWrite, absl::UnavailableError("down"));
  RunOnce();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->calls, 0);
  Advance(absl::Milliseconds(100));
  RunOnce();
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
  EXPECT_TRUE(store_->Find("101")->time_acked.has_value());
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
}

TEST_F(MessageManagerTest, AckArrivingDuringAPollKeepsTheRowOut) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue({"101", "102"});
  auto sub = Subscribe();
  std::shared_ptr<AckOutcome> a;
  store_->before_call = [&](Op op) {
    if (op == Op::kPollDue && a == nullptr) a = Ack({"101"});
  };
  RunOnce();  // the poll returns 101, which is being acked
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(sub->ids(), ElementsAre("102"));
  RunOnce();
  EXPECT_EQ(a->result, absl::StatusOr<int64_t>(1));
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(stats().queued, 0);
}

}  // namespace
}  // namespace msgq::manager_test
