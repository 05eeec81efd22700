// Unit tests of MessageManager: polling, sending and postpones (fixture in
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

}  // namespace
}  // namespace msgq::manager_test
