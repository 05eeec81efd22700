// MessageManager with Options::leased: only an owner reads and sends.
#include <memory>
#include <string>
#include <vector>

#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class OwnershipTest : public MessageManagerTest {
 protected:
  void InitLeased(TableConfig config = {}) {
    MessageManager::Options options;
    options.leased = true;
    Init(config, options);
  }
  absl::Time Mono() const { return clock_.MonotonicNow(); }
};

TEST_F(OwnershipTest, NotOwnerNeverReadsNorSendsButTakesAcks) {
  ASSERT_NO_FATAL_FAILURE(InitLeased());
  PutDue(Range(101, 103));
  auto sub = Subscribe();
  RunOnce();
  Advance(absl::Hours(2));  // past the poll and purge intervals
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 0);
  EXPECT_EQ(store_->purge_calls(), 0);
  EXPECT_THAT(sub->batches, IsEmpty());
  EXPECT_FALSE(stats().owner);

  // A row the binlog names is left to the owner.
  manager_->OnRowChanges({RowChange{.id = "104", .time_next = Now() - 1}});
  RunOnce();
  EXPECT_THAT(store_->fetches(), IsEmpty());

  // Any instance takes an ack: it is an UPDATE by id.
  auto ack = Ack({"102"});
  RunOnce();
  ASSERT_EQ(ack->calls, 1);
  ASSERT_TRUE(ack->result.ok()) << ack->result.status();
  EXPECT_EQ(*ack->result, 1);
  EXPECT_EQ(store_->poll_calls(), 0);
}

TEST_F(OwnershipTest, OwnPollsAtOnceAndALapsedTrustStopsSending) {
  ASSERT_NO_FATAL_FAILURE(InitLeased({.batch_size = 1}));
  PutDue(Range(101, 106));
  auto sub = Subscribe();
  manager_->Own(Mono() + absl::Seconds(3), /*images_wait=*/true);
  EXPECT_TRUE(stats().owner);
  RunOnce();
  ASSERT_EQ(store_->poll_calls(), 1);
  // Two batches outstanding per subscriber.
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
  EXPECT_EQ(stats().queued, 4);

  // The renewal never came: past the trust window nothing more is sent,
  // and the queued rows are dropped (the next owner reads them).
  Advance(absl::Seconds(3));
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
  EXPECT_FALSE(stats().owner);
  EXPECT_EQ(stats().queued, 0);
  // The postpones of the two sends are still written; no read happens.
  RunOnce();
  ASSERT_EQ(store_->write_calls(), 1);
  // One UPDATE names both ids; their order in it is not part of the contract.
  EXPECT_THAT(PostponedIds(store_->writes()[0].batch),
              UnorderedElementsAre("101", "102"));
  EXPECT_EQ(store_->poll_calls(), 1);

  // Granted again: the table is read afresh, not sent from a stale cache.
  manager_->Own(Mono() + absl::Seconds(3), /*images_wait=*/true);
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102", "103", "104"));
}

TEST_F(OwnershipTest, RenewalExtendsWithoutRereading) {
  ASSERT_NO_FATAL_FAILURE(InitLeased({.batch_size = 1}));
  PutDue(Range(101, 104));
  auto sub = Subscribe();
  manager_->Own(Mono() + absl::Seconds(3), /*images_wait=*/true);
  RunOnce();
  Advance(absl::Seconds(2));
  manager_->Own(Mono() + absl::Seconds(3),
                /*images_wait=*/true);  // renewed before it ran out
  Advance(absl::Seconds(2));
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102", "103", "104"));
  EXPECT_EQ(store_->poll_calls(), 1);
}

TEST_F(OwnershipTest, DisownStopsAtOnceAndQuiescesOncePostponesCommit) {
  ASSERT_NO_FATAL_FAILURE(InitLeased({.batch_size = 1}));
  PutDue(Range(101, 104));
  auto sub = Subscribe();
  manager_->Own(absl::InfiniteFuture(), /*images_wait=*/true);
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
  EXPECT_FALSE(manager_->Quiesced());  // two postpones owed

  manager_->Disown();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAre("101", "102"));
  EXPECT_FALSE(manager_->Quiesced());
  RunOnce();  // writes the owed postpones, reads nothing
  EXPECT_TRUE(manager_->Quiesced());
  EXPECT_EQ(store_->poll_calls(), 1);
  ASSERT_EQ(store_->write_calls(), 1);
  // One UPDATE names both ids; their order in it is not part of the contract.
  EXPECT_THAT(PostponedIds(store_->writes()[0].batch),
              UnorderedElementsAre("101", "102"));
}

TEST_F(OwnershipTest, FailedPostponeKeepsTheManagerUnquiesced) {
  ASSERT_NO_FATAL_FAILURE(InitLeased({.batch_size = 1}));
  PutDue(Range(101, 101));
  auto sub = Subscribe();
  manager_->Own(absl::InfiniteFuture(), /*images_wait=*/true);
  RunOnce();
  manager_->Disown();
  store_->FailAll(absl::UnavailableError("gone"));
  RunOnce();
  EXPECT_FALSE(manager_->Quiesced());  // owed again after a transient failure
  store_->Recover();
  Advance(absl::Seconds(1));  // past the retry delay
  RunOnce();
  EXPECT_TRUE(manager_->Quiesced());
}

TEST_F(OwnershipTest, UnleasedManagerOwnsFromTheStart) {
  ASSERT_NO_FATAL_FAILURE(Init());
  EXPECT_TRUE(stats().owner);
  EXPECT_TRUE(manager_->Quiesced());
}

}  // namespace
}  // namespace msgq::manager_test
