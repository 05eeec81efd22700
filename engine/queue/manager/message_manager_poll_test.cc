// MessageManager's poll (message_manager_poll.cc): a refill under a backlog
// reads the due ids first, then only the rows it does not hold.
#include <string>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

// Cache of 4, batches of 2, one batch in flight per subscriber: the first
// poll fills the cache (101-104) and sends 101-102, which leaves the cache
// at half with a backlog, so the next round refills it.
class PollByIdsTest : public MessageManagerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2, .cache_size = 4},
                                 {.max_batches_per_subscriber = 1}));
    store_->set_polls_ids(true);
    PutDue(Range(101, 110));
    RunOnce();  // the start-up purge, so that rounds below only poll
    sub_ = Subscribe();
  }

  std::shared_ptr<FakeSubscriber> sub_;
};

TEST_F(PollByIdsTest, AnEmptyCacheReadsRowsInOneStatement) {
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(store_->polls()[0].limit, 4);
  EXPECT_THAT(store_->polls()[0].ids, ElementsAreArray(Range(101, 104)));
  EXPECT_THAT(store_->id_polls(), IsEmpty());
  EXPECT_THAT(store_->fetches(), IsEmpty());
  EXPECT_THAT(sub_->ids(), ElementsAre("101", "102"));
  EXPECT_EQ(stats().queued, 2);
}

TEST_F(PollByIdsTest, RefillReadsOnlyTheRowsItDoesNotHold) {
  RunOnce();
  ASSERT_THAT(sub_->ids(), ElementsAre("101", "102"));
  RunOnce();  // postpones 101-102 (they leave flight), then refills
  ASSERT_EQ(store_->write_calls(), 1);
  EXPECT_EQ(store_->poll_calls(), 1);
  ASSERT_EQ(store_->id_polls().size(), 1u);
  // 103-104 queued, none in flight: limit 4 + 0, due ids 103-106, of which
  // only 105-106 are read.
  EXPECT_EQ(store_->id_polls()[0].limit, 4);
  EXPECT_THAT(store_->id_polls()[0].ids, ElementsAreArray(Range(103, 106)));
  EXPECT_THAT(store_->fetches(), ElementsAre(ElementsAre("105", "106")));
  EXPECT_EQ(stats().queued, 4);
  EXPECT_EQ(stats().polls, 2);

  // The poll hit its limit (a backlog): the cache refills at half again.
  CompleteOne(*sub_);
  EXPECT_THAT(sub_->ids(), ElementsAreArray(Range(101, 104)));
  RunOnce();
  ASSERT_EQ(store_->id_polls().size(), 2u);
  EXPECT_THAT(store_->id_polls()[1].ids, ElementsAreArray(Range(105, 108)));
  EXPECT_THAT(store_->fetches(), ElementsAre(ElementsAre("105", "106"),
                                             ElementsAre("107", "108")));
  CompleteOne(*sub_);
  CompleteOne(*sub_);
  EXPECT_THAT(sub_->ids(), ElementsAreArray(Range(101, 108)));
}

// New rows of a better priority come first in the poll's order, ahead of
// the held ones: only as many are read as the cache has room for, and the
// rest at the next refill.
TEST_F(PollByIdsTest, BetterRowsThanTheCacheHoldsAreReadAsRoomAllows) {
  RunOnce();
  ASSERT_THAT(sub_->ids(), ElementsAre("101", "102"));
  PutDue(Range(201, 204), /*priority=*/-1);
  RunOnce();
  ASSERT_EQ(store_->id_polls().size(), 1u);
  EXPECT_THAT(store_->id_polls()[0].ids, ElementsAreArray(Range(201, 204)));
  EXPECT_THAT(store_->fetches(), ElementsAre(ElementsAre("201", "202")));
  CompleteOne(*sub_);
  EXPECT_THAT(sub_->ids(), ElementsAre("101", "102", "201", "202"));
  RunOnce();
  ASSERT_EQ(store_->id_polls().size(), 2u);
  EXPECT_THAT(store_->id_polls()[1].ids,
              ElementsAre("203", "204", "103", "104"));
  EXPECT_THAT(store_->fetches(), ElementsAre(ElementsAre("201", "202"),
                                             ElementsAre("203", "204")));
  CompleteOne(*sub_);
  CompleteOne(*sub_);
  EXPECT_THAT(sub_->ids(), ElementsAre("101", "102", "201", "202", "203", "204",
                                       "103", "104"));
}

TEST_F(PollByIdsTest, ARowSettledBetweenItsIdAndItsReadIsNotQueued) {
  RunOnce();
  // 105 is acked by someone else after the ids are listed, before the rows
  // are read (FetchDue reads only rows still due).
  store_->before_call = [this](Op op) {
    if (op == Op::kFetchDue) store_->PutAcked("105", Now());
  };
  RunOnce();
  store_->before_call = nullptr;
  ASSERT_EQ(store_->id_polls().size(), 1u);
  EXPECT_THAT(store_->fetches(), ElementsAre(ElementsAre("105", "106")));
  EXPECT_EQ(stats().queued, 3);  // 103, 104, 106
  CompleteOne(*sub_);
  CompleteOne(*sub_);
  EXPECT_THAT(sub_->ids(), ElementsAre("101", "102", "103", "104", "106"));
}

TEST_F(PollByIdsTest, AFailedReadOfTheRowsFailsThePollAndLosesNothing) {
  RunOnce();
  store_->FailNext(Op::kFetchDue, absl::UnavailableError("down"));
  RunOnce();
  EXPECT_FALSE(stats().mysql_ok);
  EXPECT_EQ(stats().polls, 1);
  EXPECT_EQ(stats().queued, 2);
  Advance(absl::Seconds(1));  // past the retry backoff
  RunOnce();
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(stats().polls, 2);
  EXPECT_EQ(stats().queued, 4);
  CompleteOne(*sub_);
  CompleteOne(*sub_);
  EXPECT_THAT(sub_->ids(), ElementsAreArray(Range(101, 106)));
}

TEST_F(PollByIdsTest, AFailedIdPollIsAFailedPoll) {
  RunOnce();
  store_->FailNext(Op::kPollDueIds, absl::UnavailableError("down"));
  RunOnce();
  EXPECT_FALSE(stats().mysql_ok);
  EXPECT_EQ(stats().polls, 1);
  EXPECT_THAT(store_->fetches(), IsEmpty());
  Advance(absl::Seconds(1));
  RunOnce();
  EXPECT_TRUE(stats().mysql_ok);
  EXPECT_EQ(stats().polls, 2);
  EXPECT_THAT(store_->fetches(), ElementsAre(ElementsAre("105", "106")));
}

// The cache holds at most cache_max_bytes of rows, and a read is sized
// from the largest row the last read brought, so that rows far larger than
// the usual never fill memory by their number.
TEST_F(MessageManagerTest, ReadsAreSizedByTheCachesBytesAndTheLargestRow) {
  ASSERT_NO_FATAL_FAILURE(
      Init({.batch_size = 2, .cache_size = 100},
           {.max_batches_per_subscriber = 1, .cache_max_bytes = 1000}));
  // WireBytes of each: 3 (id) + 190 (payload) + 10 per column = 213.
  for (const std::string& id : Range(101, 110)) {
    store_->Put({.id = id,
                 .time_next = Now() - kSecond,
                 .payload = std::string(190, 'p')});
  }
  RunOnce();  // the start-up purge
  std::shared_ptr<FakeSubscriber> sub = Subscribe();
  RunOnce();
  // Nothing read yet: the first read is not sized by bytes (the store cuts
  // it at cache_max_bytes). Four rows fit in 1000 bytes; two went out.
  ASSERT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(store_->polls()[0].limit, 100);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
  EXPECT_EQ(stats().queued, 2);
  RunOnce();  // postpones 101-102, then refills
  // The poll reads the queued rows again: 1000 bytes hold four of 213.
  ASSERT_EQ(store_->poll_calls(), 2);
  EXPECT_EQ(store_->polls()[1].limit, 4);
  EXPECT_THAT(store_->polls()[1].ids, ElementsAreArray(Range(103, 106)));
  EXPECT_EQ(stats().queued, 4);
}

}  // namespace
}  // namespace msgq::manager_test
