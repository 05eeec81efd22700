// Unit tests of MessageManager's queue logic (fixture in
// message_manager_fixture.h).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/queue/message_manager_fixture.h"
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
// Polling and sending

TEST_F(MessageManagerTest, NoSubscribersNoPoll) {
  ASSERT_NO_FATAL_FAILURE(Init());
  PutDue(Range(101, 103));
  RunOnce();
  Advance(absl::Hours(2));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 0);
  EXPECT_EQ(store_->next_due_calls(), 0);
  EXPECT_EQ(store_->write_calls(), 0);
  EXPECT_EQ(store_->purge_calls(), 2);  // at start, then each interval
  EXPECT_EQ(stats().polls, 0);
  EXPECT_EQ(stats().queued, 0);
  EXPECT_EQ(stats().subscribers, 0);
}

TEST_F(MessageManagerTest, SubscribeTriggersOnePollAndBatchesInOrder) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 3, .cache_size = 100}));
  PutDue(Range(101, 107));
  auto sub = Subscribe();
  EXPECT_THAT(sub->batches, IsEmpty());  // the poll runs on the manager
  EXPECT_EQ(store_->poll_calls(), 0);

  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(store_->polls()[0].now, Now());
  EXPECT_EQ(store_->polls()[0].limit, 100);
  EXPECT_EQ(store_->next_due_calls(), 1);  // the poll took every due row
  // Two batches outstanding per subscriber (Options default).
  EXPECT_THAT(sub->batch_ids(), ElementsAre(ElementsAre("101", "102", "103"),
                                            ElementsAre("104", "105", "106")));
  EXPECT_EQ(stats().polls, 1);
  EXPECT_EQ(stats().sent, 6);
  EXPECT_EQ(stats().queued, 1);
  EXPECT_EQ(stats().in_flight, 6);

  const Message& first = sub->batches[0][0];
  EXPECT_EQ(first.epoch, 0);
  EXPECT_EQ(first.priority, 0);
  EXPECT_EQ(first.time_next, Now() - kSecond);
  ASSERT_NE(first.row, nullptr);
  EXPECT_THAT(first.row->lengths, ElementsAre(3, 11));
  EXPECT_EQ(first.row->values, "101payload-101");

  CompleteOne(*sub);
  EXPECT_THAT(sub->batch_ids(), ElementsAre(ElementsAre("101", "102", "103"),
                                            ElementsAre("104", "105", "106"),
                                            ElementsAre("107")));
  EXPECT_EQ(stats().queued, 0);

  // The next round postpones, and does not poll again.
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
}

TEST_F(MessageManagerTest, BatchSizeOneSendsInPriorityTimeNextIdOrder) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1}));
  const int64_t t = Now();
  store_->PutDue("105", t - 10 * kSecond, /*priority=*/1);
  store_->PutDue("101", t - 30 * kSecond, /*priority=*/2);
  store_->PutDue("103", t - 20 * kSecond, /*priority=*/1);
  store_->PutDue("102", t - 20 * kSecond, /*priority=*/1);
  store_->PutDue("104", t, /*priority=*/0);
  store_->PutDue("106", t - 40 * kSecond, /*priority=*/1);
  store_->PutDue("107", t + kSecond, /*priority=*/0);  // not due yet
  auto sub = Subscribe();
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(),
              ElementsAre("104", "106", "102", "103", "105", "101"));
  for (const MessageBatch& b : sub->batches) EXPECT_EQ(b.size(), 1u);
}

TEST_F(MessageManagerTest, IntegerIdsAreSentInNumericOrder) {
  // Rows inserted with the schema's time_next DEFAULT 0 differ only by id:
  // the poll orders them numerically (ORDER BY priority, time_next, id), and
  // the cache must keep that order ("oldest first"), not "10" < "9".
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1}));
  for (const char* id : {"9", "10", "11", "100", "1000"}) {
    store_->PutDue(id, 0);
  }
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(store_->polls()[0].ids,
              ElementsAre("9", "10", "11", "100", "1000"));
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("9", "10", "11", "100", "1000"));
}

TEST_F(MessageManagerTest, RoundRobinAcrossThreeSubscribers) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 109));
  auto a = Subscribe();
  auto b = Subscribe();
  auto c = Subscribe();
  RunOnce();
  EXPECT_THAT(a->ids(), ElementsAre("101"));
  EXPECT_THAT(b->ids(), ElementsAre("102"));
  EXPECT_THAT(c->ids(), ElementsAre("103"));
  EXPECT_EQ(stats().queued, 6);

  CompleteOne(*b);  // a is next in turn but busy: b gets it
  CompleteOne(*a);
  CompleteOne(*c);
  CompleteOne(*a);
  CompleteOne(*b);
  CompleteOne(*c);
  EXPECT_THAT(a->ids(), ElementsAre("101", "105", "107"));
  EXPECT_THAT(b->ids(), ElementsAre("102", "104", "108"));
  EXPECT_THAT(c->ids(), ElementsAre("103", "106", "109"));
  EXPECT_EQ(stats().queued, 0);
}

TEST_F(MessageManagerTest, BusySubscriberIsSkippedUntilSendDone) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 1}, {.max_batches_per_subscriber = 2}));
  PutDue(Range(101, 108));
  auto a = Subscribe();
  auto b = Subscribe();
  RunOnce();
  EXPECT_THAT(a->ids(), ElementsAre("101", "103"));
  EXPECT_THAT(b->ids(), ElementsAre("102", "104"));
  EXPECT_EQ(stats().queued, 4);  // both have 2 outstanding: nothing more

  CompleteOne(*a);  // b's turn, but b is busy
  EXPECT_THAT(a->ids(), ElementsAre("101", "103", "105"));
  CompleteOne(*a);
  EXPECT_THAT(a->ids(), ElementsAre("101", "103", "105", "106"));
  EXPECT_THAT(b->ids(), ElementsAre("102", "104"));
  EXPECT_EQ(stats().queued, 2);

  CompleteOne(*b);
  EXPECT_THAT(b->ids(), ElementsAre("102", "104", "107"));
  EXPECT_THAT(a->ids(), ElementsAre("101", "103", "105", "106"));
  EXPECT_EQ(stats().queued, 1);
}

TEST_F(MessageManagerTest, LateSubscriberGetsQueuedMessagesAtOnce) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 2}, {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 104));
  auto a = Subscribe();
  RunOnce();
  EXPECT_THAT(a->ids(), ElementsAre("101", "102"));
  auto b = Subscribe();  // no poll needed: the cache has work
  EXPECT_THAT(b->ids(), ElementsAre("103", "104"));
  EXPECT_EQ(store_->poll_calls(), 1);
}

TEST_F(MessageManagerTest, FullCacheIsNotPolledUntilItDrains) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 1, .cache_size = 2},
                               {.max_batches_per_subscriber = 1}));
  PutDue(Range(101, 106));
  auto sub = Subscribe();
  RunOnce();  // polls 2, sends 101, so the cache is below half: poll again
  EXPECT_THAT(sub->ids(), ElementsAre("101"));
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 2);
  EXPECT_EQ(stats().queued, 2);  // 102, 103: full

  Advance(absl::Hours(2));  // past poller_interval and every time_next
  RunOnce();
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_LE(stats().queued, 2);

  CompleteOne(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 3);
  EXPECT_LE(stats().queued, 2);
}

// ---------------------------------------------------------------------------
// Postponing

TEST_F(MessageManagerTest, PostponesEverySentIdInOneWrite) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 3, .ack_wait_s = 30}));  // min_backoff = ack_wait
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102", "103"));
  EXPECT_EQ(store_->write_calls(), 0);
  EXPECT_EQ(stats().in_flight, 3);

  Advance(absl::Seconds(2));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  const WriteBatch& w = store_->writes()[0].batch;
  EXPECT_EQ(w.now, Now());
  EXPECT_THAT(PostponedIds(w), UnorderedElementsAre("101", "102", "103"));
  // now + ack_wait + clamp(min_backoff * 2^0 * 1.0) = now + 60s.
  for (const Postponement& p : w.postpones) {
    EXPECT_EQ(p.time_next, Now() + 60 * kSecond) << p.id;
  }
  EXPECT_THAT(w.ack_groups, IsEmpty());
  for (const std::string& id : Range(101, 103)) {
    const FakeMessageStore::Row* row = store_->Find(id);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->epoch, 1) << id;
    EXPECT_EQ(row->time_next, Now() + 60 * kSecond) << id;
    EXPECT_FALSE(row->time_acked.has_value()) << id;
  }
  EXPECT_EQ(stats().in_flight, 0);

  RunOnce();
  EXPECT_EQ(store_->write_calls(), 1);  // nothing left to write
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102", "103"));
}

TEST_F(MessageManagerTest, PostponeDelayDependsOnEpochWithOneJitterPerEpoch) {
  CountingJitter jitter(1.0);
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 10,
            .ack_wait_s = 30,
            .extra = ",vt_min_backoff=10,vt_max_backoff=100"},
           {}, &jitter));
  const int64_t due = Now() - kSecond;
  store_->PutDue("101", due, 0, /*epoch=*/0);
  store_->PutDue("102", due, 0, /*epoch=*/2);
  store_->PutDue("103", due, 0, /*epoch=*/5);
  store_->PutDue("104", due, 0, /*epoch=*/2);
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102", "103", "104"));
  EXPECT_EQ(sub->batches[0][1].epoch, 2);
  EXPECT_EQ(jitter.calls, 0);

  RunOnce();
  EXPECT_EQ(jitter.calls, 3);  // epochs 0, 2 and 5
  ASSERT_EQ(store_->write_calls(), 1);
  const int64_t now = Now();
  auto time_next = [&](const std::string& id) {
    return *store_->Find(id)->time_next;
  };
  EXPECT_EQ(time_next("101"), now + (30 + 10) * kSecond);
  EXPECT_EQ(time_next("102"), now + (30 + 40) * kSecond);
  EXPECT_EQ(time_next("104"), now + (30 + 40) * kSecond);
  EXPECT_EQ(time_next("103"), now + (30 + 100) * kSecond);  // 320 > max
  EXPECT_EQ(store_->Find("101")->epoch, 1);
  EXPECT_EQ(store_->Find("102")->epoch, 3);
  EXPECT_EQ(store_->Find("103")->epoch, 6);
  EXPECT_EQ(store_->Find("104")->epoch, 3);
  // One UPDATE per distinct time_next.
  EXPECT_EQ(store_->statements(), 1 /*poll*/ + 1 /*next due*/ + 1 /*purge*/ +
                                      1 /*count dead*/ + 3 /*postpones*/);
}

TEST_F(MessageManagerTest, PostponeUsesTheJitter) {
  FixedJitter low(kMinJitter);
  ASSERT_NO_FATAL_FAILURE(Init({.ack_wait_s = 30}, {}, &low));
  store_->PutDue("101", Now() - kSecond, 0, /*epoch=*/1);
  auto sub = Subscribe();
  RunOnce();
  RunOnce();
  // floor(30s * 2 * 0.666) = 39.96s.
  EXPECT_EQ(*store_->Find("101")->time_next,
            Now() + 30 * kSecond + int64_t{39'960'000'000});
}

TEST_F(MessageManagerTest, CoalescesPostponesOfSeveralBatchesAndSubscribers) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2}));
  PutDue(Range(101, 110));
  auto a = Subscribe();
  auto b = Subscribe();
  RunOnce();
  EXPECT_EQ(a->batches.size(), 2u);
  EXPECT_EQ(b->batches.size(), 2u);
  CompleteOne(*a);  // one more batch to a
  ASSERT_EQ(a->batches.size(), 3u);
  EXPECT_EQ(store_->write_calls(), 0);

  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_THAT(PostponedIds(store_->writes()[0].batch),
              UnorderedElementsAreArray(Range(101, 110)));
  EXPECT_EQ(stats().in_flight, 0);
}

TEST_F(MessageManagerTest, IdsStayInFlightUntilThePostponeCommits) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 3}, {.retry_min = absl::Milliseconds(100)}));
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("101", "102", "103"));
  Complete(*sub);

  store_->FailNext(Op::kWrite, absl::UnavailableError("MySQL went away"), 2);
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_EQ(store_->writes()[0].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(stats().mysql_ok);
  EXPECT_EQ(stats().in_flight, 3);
  EXPECT_EQ(stats().queued, 0);

  // Nothing at all before the retry time.
  RunOnce();
  Advance(absl::Milliseconds(99));
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 1);
  EXPECT_EQ(store_->poll_calls(), 1);

  // At the retry time: the postpone fails again and the round ends there,
  // without a poll against the dead server.
  Advance(absl::Milliseconds(1));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 2);
  EXPECT_THAT(PostponedIds(store_->writes()[1].batch),
              UnorderedElementsAre("101", "102", "103"));
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(stats().queued, 0);
  EXPECT_EQ(stats().in_flight, 3);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102", "103"));

  // MySQL answers again: the same ids are postponed, once.
  Advance(absl::Seconds(1));
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 3);
  EXPECT_TRUE(store_->writes()[2].status.ok());
  EXPECT_THAT(PostponedIds(store_->writes()[2].batch),
              UnorderedElementsAre("101", "102", "103"));
  for (const std::string& id : Range(101, 103)) {
    EXPECT_EQ(store_->Find(id)->epoch, 1) << id;
    EXPECT_EQ(*store_->Find(id)->time_next, Now() + 60 * kSecond) << id;
  }
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(stats().in_flight, 0);
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102", "103"));
}

TEST_F(MessageManagerTest, AbortedWriteIsRetriedNextRoundWithoutBackoff) {
  // A deadlock or lock wait (ABORTED) is not an outage: retry at once.
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2}));
  PutDue({"101", "102"});
  auto sub = Subscribe();
  RunOnce();
  auto a = Ack({"102"});
  store_->FailNext(Op::kWrite, absl::AbortedError("deadlock"));
  RunOnce();
  EXPECT_EQ(a->result.status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(stats().in_flight, 2);
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 2);
  EXPECT_THAT(PostponedIds(store_->writes()[1].batch),
              UnorderedElementsAre("101", "102"));
  EXPECT_THAT(store_->writes()[1].batch.ack_groups, IsEmpty());
  EXPECT_EQ(stats().in_flight, 0);
}

TEST_F(MessageManagerTest, PermanentWriteErrorLeavesMessagesForTheNextPoll) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 3, .poller_interval_s = 600}));
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();
  Complete(*sub);
  store_->FailNext(Op::kWrite, absl::InternalError("bad"));
  RunOnce();
  EXPECT_EQ(store_->writes()[0].status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(store_->write_calls(), 1);  // not retried

  Advance(absl::Seconds(600));
  RunOnce();
  EXPECT_THAT(sub->ids(),
              ElementsAre("101", "102", "103", "101", "102", "103"));
  EXPECT_EQ(sub->batches[1][0].epoch, 0);
}

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
