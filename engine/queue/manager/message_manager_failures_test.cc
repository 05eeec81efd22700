// MessageManager's failure handling against the in-memory store: nacks
// (delay, backoff, dead), extends, redrives, the dead list, and msgq's own
// deaths of rows it reads (max attempts, max age, size). Exact writes and
// exact replies; no MySQL, no threads.
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

TableConfig WithFailureColumns(std::string extra = "") {
  TableConfig config;
  config.failure_columns = true;
  config.extra = std::move(extra);
  return config;
}

template <typename T>
struct Outcome {
  int calls = 0;
  absl::StatusOr<T> result = absl::UnknownError("not called");
};

class FailureManagerTest : public MessageManagerTest {
 protected:
  std::shared_ptr<Outcome<NackCount>> Nack(
      std::vector<MessageManager::Delivery> deliveries,
      std::optional<absl::Duration> delay, std::string reason = "",
      bool dead = false) {
    auto out = std::make_shared<Outcome<NackCount>>();
    MessageManager::NackRequest request;
    request.deliveries = std::move(deliveries);
    request.delay = delay;
    request.reason = std::move(reason);
    request.dead = dead;
    manager_->Nack(std::move(request), [out](absl::StatusOr<NackCount> r) {
      ++out->calls;
      out->result = std::move(r);
    });
    return out;
  }
  std::shared_ptr<Outcome<int64_t>> Extend(
      std::vector<MessageManager::Delivery> deliveries, absl::Duration d) {
    auto out = std::make_shared<Outcome<int64_t>>();
    manager_->Extend(std::move(deliveries), d,
                     [out](absl::StatusOr<int64_t> r) {
                       ++out->calls;
                       out->result = std::move(r);
                     });
    return out;
  }
  std::shared_ptr<Outcome<int64_t>> Redrive(std::vector<std::string> ids,
                                            bool all) {
    auto out = std::make_shared<Outcome<int64_t>>();
    manager_->Redrive(std::move(ids), all, [out](absl::StatusOr<int64_t> r) {
      ++out->calls;
      out->result = std::move(r);
    });
    return out;
  }
  std::shared_ptr<Outcome<std::vector<DeadRow>>> ListDead(std::string after,
                                                          int limit) {
    auto out = std::make_shared<Outcome<std::vector<DeadRow>>>();
    manager_->ListDead(std::move(after), limit,
                       [out](absl::StatusOr<std::vector<DeadRow>> r) {
                         ++out->calls;
                         out->result = std::move(r);
                       });
    return out;
  }
  // Subscribes, polls and returns the subscriber holding ids [1, n].
  std::shared_ptr<FakeSubscriber> Deliver(int n) {
    PutDue(Range(1, n));
    auto sub = Subscribe();
    RunOnce();
    Complete(*sub);
    EXPECT_EQ(sub->ids(), Range(1, n));
    return sub;
  }
};

TEST_F(FailureManagerTest,
       ANackIsWrittenAfterItsSendsPostponeAndRetriesAtItsDelay) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns()));
  auto sub = Deliver(1);
  auto nack = Nack({{"1", 0}}, absl::Seconds(5), "boom");
  EXPECT_EQ(nack->calls, 0);  // written by the next round
  const int64_t nacked_at = Now();
  RunOnce();
  const WriteBatch& batch = store_->writes().back().batch;
  EXPECT_THAT(PostponedIds(batch), ElementsAre("1"));  // same transaction
  ASSERT_EQ(batch.nack_groups.size(), 1u);
  EXPECT_EQ(batch.nack_groups[0].reason, "boom");
  ASSERT_EQ(batch.nack_groups[0].nacks.size(), 1u);
  EXPECT_EQ(batch.nack_groups[0].nacks[0].epoch, 0);
  EXPECT_EQ(batch.nack_groups[0].nacks[0].time_next, nacked_at + 5 * kSecond);
  ASSERT_EQ(nack->calls, 1);
  ASSERT_TRUE(nack->result.ok()) << nack->result.status();
  EXPECT_EQ(nack->result->retried, 1);
  EXPECT_EQ(nack->result->dead, 0);
  EXPECT_EQ(stats().in_flight, 0);
  EXPECT_EQ(stats().nacked, 1);
  EXPECT_EQ(*store_->Find("1")->last_error, "boom");
  Advance(absl::Seconds(4));
  RunOnce();
  EXPECT_EQ(sub->ids().size(), 1u);  // not earlier
  Advance(absl::Seconds(1));
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("1", "1"));
  EXPECT_EQ(sub->batches.back()[0].epoch, 1);
}

TEST_F(FailureManagerTest, ANackWithoutADelayRetriesAfterTheBackoffOfItsEpoch) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns(",vt_min_backoff=2")));
  Deliver(1);
  const int64_t t = Now();
  auto nack = Nack({{"1", 0}}, std::nullopt);
  RunOnce();
  const WriteBatch& batch = store_->writes().back().batch;
  ASSERT_EQ(batch.nack_groups.size(), 1u);
  // min_backoff * 2^0 * jitter 1.0, and no ack wait.
  EXPECT_EQ(batch.nack_groups[0].nacks[0].time_next, t + 2 * kSecond);
  ASSERT_TRUE(nack->result.ok());
  EXPECT_EQ(nack->result->retried, 1);
}

TEST_F(FailureManagerTest, ADeadNackKillsAndIsCounted) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns()));
  Deliver(2);
  auto nack = Nack({{"1", 0}, {"2", 7}}, std::nullopt, "never", true);
  RunOnce();
  ASSERT_TRUE(nack->result.ok()) << nack->result.status();
  EXPECT_EQ(nack->result->dead, 1);  // 2's epoch is not 8: a stale holder
  EXPECT_EQ(nack->result->retried, 0);
  const FakeMessageStore::Row* row = store_->Find("1");
  EXPECT_FALSE(row->time_next.has_value());
  EXPECT_FALSE(row->time_acked.has_value());
  EXPECT_EQ(*row->last_error, "never");
  EXPECT_EQ(stats().died, 1);
  // Counted by the first round's purge step (0), then kept current.
  EXPECT_EQ(stats().dead, 1);
}

TEST_F(FailureManagerTest, BadNacksExtendsAndRedrivesAreRefusedAtOnce) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns()));
  auto nack = Nack({{"1", 0}}, absl::Seconds(-1));
  ASSERT_EQ(nack->calls, 1);
  EXPECT_EQ(nack->result.status().code(), absl::StatusCode::kInvalidArgument);
  nack = Nack({{"x", 0}}, absl::ZeroDuration());
  EXPECT_EQ(nack->result.status().code(), absl::StatusCode::kInvalidArgument);
  auto extend = Extend({{"1", 0}}, absl::ZeroDuration());
  EXPECT_EQ(extend->result.status().code(), absl::StatusCode::kInvalidArgument);
  extend = Extend({{"1", 0}}, absl::Hours(13));
  EXPECT_EQ(extend->result.status().code(), absl::StatusCode::kInvalidArgument);
  auto redrive = Redrive({}, false);
  EXPECT_EQ(redrive->result.status().code(),
            absl::StatusCode::kInvalidArgument);
  redrive = Redrive({"1"}, true);
  EXPECT_EQ(redrive->result.status().code(),
            absl::StatusCode::kInvalidArgument);
  auto list = ListDead("", 0);
  EXPECT_EQ(list->result.status().code(), absl::StatusCode::kInvalidArgument);
  RunOnce();
  EXPECT_EQ(store_->write_calls(), 0);
}

TEST_F(FailureManagerTest, ARowReadPastMaxAttemptsDiesInsteadOfBeingSent) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns(",msgq_max_attempts=3")));
  PutDue(Range(1, 2));
  FakeMessageStore::Row tired = *store_->Find("2");
  tired.epoch = 3;
  store_->Put(tired);
  auto sub = Subscribe();
  RunOnce();  // poll: 1 is sent, 2 must die
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  RunOnce();  // the death is written
  const WriteBatch& batch = store_->writes().back().batch;
  ASSERT_EQ(batch.nack_groups.size(), 1u);
  EXPECT_EQ(batch.nack_groups[0].reason,
            "not acked after 3 sends (msgq_max_attempts=3)");
  ASSERT_EQ(batch.nack_groups[0].nacks.size(), 1u);
  EXPECT_EQ(batch.nack_groups[0].nacks[0].id, "2");
  EXPECT_EQ(batch.nack_groups[0].nacks[0].epoch, 2);  // row epoch 3 = 2 + 1
  EXPECT_FALSE(batch.nack_groups[0].nacks[0].time_next.has_value());
  EXPECT_FALSE(store_->Find("2")->time_next.has_value());
  EXPECT_EQ(stats().died, 1);
  EXPECT_EQ(stats().in_flight, 0);  // 1's postpone and 2's death are written
}

TEST_F(FailureManagerTest, ARowTooLargeDiesWithItsSizeAndTheOthersAreSent) {
  MessageManager::Options options;
  options.max_message_bytes = 100;
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns(), options));
  PutDue(Range(1, 3));
  FakeMessageStore::Row big = *store_->Find("2");
  big.payload = std::string(200, 'x');
  store_->Put(big);
  auto sub = Subscribe();
  RunOnce();
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("1", "3"));
  // id "2" (1 byte) + 200 bytes of payload + 10 per column (the fake
  // streams id and payload).
  EXPECT_THAT(*store_->Find("2")->last_error,
              ::testing::StartsWith("row of 221 bytes is larger than the "
                                    "stream limit of 100 bytes"));
}

TEST_F(FailureManagerTest, MaxAgeKillsOnlyAfterAFailure) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns(",msgq_max_age=60")));
  PutDue(Range(1, 2));
  for (const char* id : {"1", "2"}) {
    FakeMessageStore::Row old = *store_->Find(id);
    old.time_created = Now() - 3600 * kSecond;
    old.epoch = id[0] == '1' ? 0 : 1;  // 2 was sent once and not acked
    store_->Put(old);
  }
  auto sub = Subscribe();
  RunOnce();
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  EXPECT_FALSE(store_->Find("2")->time_next.has_value());
  EXPECT_EQ(*store_->Find("2")->last_error,
            "not acked and first enqueued 3600 s ago (msgq_max_age=60)");
}

TEST_F(FailureManagerTest, AnExtendIsWrittenAfterThePostponeAndKeepsTheId) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns()));
  Deliver(1);
  const int64_t t = Now();
  auto extend = Extend({{"1", 0}}, absl::Minutes(10));
  RunOnce();
  const WriteBatch& batch = store_->writes().back().batch;
  EXPECT_THAT(PostponedIds(batch), ElementsAre("1"));
  ASSERT_EQ(batch.extend_groups.size(), 1u);
  EXPECT_EQ(batch.extend_groups[0].time_next, t + 600 * kSecond);
  ASSERT_TRUE(extend->result.ok()) << extend->result.status();
  EXPECT_EQ(*extend->result, 1);
  EXPECT_EQ(*store_->Find("1")->time_next, t + 600 * kSecond);
  // A stale delivery extends nothing.
  extend = Extend({{"1", 5}}, absl::Minutes(10));
  RunOnce();
  EXPECT_EQ(*extend->result, 0);
}

TEST_F(FailureManagerTest, RedriveMakesDeadRowsDueAndPolls) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns()));
  store_->PutDead("4", 3, Now() - kSecond, "old failure");
  store_->PutDead("5", 1, Now() - kSecond, "old failure");
  auto sub = Subscribe();
  RunOnce();
  EXPECT_THAT(sub->ids(), IsEmpty());
  auto list = ListDead("", 10);
  RunOnce();
  ASSERT_TRUE(list->result.ok()) << list->result.status();
  ASSERT_EQ(list->result->size(), 2u);
  EXPECT_EQ((*list->result)[0].id, "4");
  EXPECT_EQ((*list->result)[0].epoch, 3);
  EXPECT_EQ((*list->result)[0].last_error, "old failure");
  auto redrive = Redrive({"4", "1"}, false);
  RunOnce();  // the redrive, then (next round) the poll it asked for
  ASSERT_TRUE(redrive->result.ok()) << redrive->result.status();
  EXPECT_EQ(*redrive->result, 1);
  RunOnce();
  Complete(*sub);
  ASSERT_THAT(sub->ids(), ElementsAre("4"));
  EXPECT_EQ(sub->batches[0][0].epoch, 0);
}

TEST_F(FailureManagerTest, StoppingAnswersEveryWaitingRequest) {
  ASSERT_NO_FATAL_FAILURE(Init(WithFailureColumns()));
  Deliver(1);
  store_->FailAll(absl::UnavailableError("down"));
  auto nack = Nack({{"1", 0}}, absl::ZeroDuration());
  auto extend = Extend({{"1", 0}}, absl::Seconds(1));
  auto redrive = Redrive({}, true);
  auto list = ListDead("", 5);
  manager_->Stop(absl::UnavailableError("bye"));
  for (const absl::Status& s :
       {nack->result.status(), extend->result.status(),
        redrive->result.status(), list->result.status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
  EXPECT_EQ(nack->calls + extend->calls + redrive->calls + list->calls, 4);
}

}  // namespace
}  // namespace msgq::manager_test
