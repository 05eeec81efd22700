// Per-subscriber prefetch (Subscribe's max_unacked): a subscriber holds at
// most that many messages unacked; an ack (MessageAck or the binlog), a nack,
// or the message coming due again (its ack wait over) frees a slot.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class PrefetchTest : public MessageManagerTest {
 protected:
  std::shared_ptr<FakeSubscriber> SubscribeLimited(int max_unacked) {
    auto sub = std::make_shared<FakeSubscriber>();
    const absl::Status status = manager_->Subscribe(sub, max_unacked);
    EXPECT_TRUE(status.ok()) << status;
    return sub;
  }
  void NackNow(const std::string& id) {
    MessageManager::NackRequest request;
    request.deliveries.push_back({id, 0});
    request.delay = absl::ZeroDuration();
    manager_->Nack(std::move(request), [](absl::StatusOr<NackCount>) {});
  }
};

TEST_F(PrefetchTest, EachWayOfSettlingFreesASlot) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10, .cache_size = 100}));
  PutDue(Range(1, 20));
  auto sub = SubscribeLimited(5);
  RunOnce();
  EXPECT_THAT(sub->batch_ids(), ElementsAre(ElementsAreArray(Range(1, 5))));
  Complete(*sub);  // a free batch slot, but no room
  EXPECT_EQ(sub->batches.size(), 1u);
  EXPECT_EQ(stats().queued, 15);

  auto acked = Ack({"1", "2"});  // MessageAck
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAreArray(Range(1, 7)));
  NackNow("3");
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAreArray(Range(1, 8)));
  RowChange binlog_ack;  // acked through another msgqd
  binlog_ack.id = "4";
  binlog_ack.time_next = Now();
  binlog_ack.time_acked = Now();
  manager_->OnRowChanges({binlog_ack});
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAreArray(Range(1, 9)));
  EXPECT_EQ(stats().sent, 9);

  // Writes the postpones (ack wait + backoff: 60 s), the acks, the nack.
  RunOnce();
  EXPECT_EQ(acked->calls, 1);
  Complete(*sub);
  EXPECT_EQ(sub->ids().size(), 9u);
  // Past the ack wait 4..9 are due again: read, they free their slots.
  Advance(absl::Seconds(61));
  RunOnce();
  Complete(*sub);
  EXPECT_THAT(sub->ids(), ElementsAreArray(Range(1, 14)));
}

TEST_F(PrefetchTest, BatchesAreCutToTheRoomLeft) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 4, .cache_size = 100}));
  PutDue(Range(1, 10));
  auto sub = SubscribeLimited(3);
  auto other = Subscribe();  // unlimited, as before
  RunOnce();
  // Round-robin: 3 (room), then 4, then nothing more for `sub`, 4 more.
  EXPECT_THAT(sub->batch_ids(), ElementsAre(ElementsAre("1", "2", "3")));
  EXPECT_THAT(other->batch_ids(), ElementsAre(ElementsAre("4", "5", "6", "7"),
                                              ElementsAre("8", "9", "10")));
  auto acked = Ack({"1"});
  EXPECT_EQ(sub->batches.size(), 1u);  // the cache is empty
}

TEST_F(PrefetchTest, ALeavingSubscriberTakesItsHoldsAlong) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2, .cache_size = 100}));
  PutDue(Range(1, 6));
  auto first = SubscribeLimited(2);
  RunOnce();
  EXPECT_THAT(first->ids(), ElementsAre("1", "2"));
  manager_->Unsubscribe(first.get());
  auto second = SubscribeLimited(2);
  EXPECT_THAT(second->ids(), ElementsAre("3", "4"));
  // Acks of the first one's messages free nothing of the second's.
  auto acked = Ack({"1", "2"});
  Complete(*second);
  EXPECT_THAT(second->ids(), ElementsAre("3", "4"));
  auto more = Ack({"3"});
  Complete(*second);
  EXPECT_THAT(second->ids(), ElementsAre("3", "4", "5"));
}

TEST_F(PrefetchTest, AFailedSendFreesItsSlots) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 2, .cache_size = 100}));
  PutDue(Range(1, 4));
  auto first = SubscribeLimited(2);
  auto second = SubscribeLimited(2);
  RunOnce();
  EXPECT_THAT(first->ids(), ElementsAre("1", "2"));
  EXPECT_THAT(second->ids(), ElementsAre("3", "4"));
  // first's stream ends before writing: 1, 2 go back; second is full.
  manager_->OnSendFailed(first.get(), std::move(first->batches[0]));
  EXPECT_EQ(second->ids().size(), 2u);
  EXPECT_EQ(stats().queued, 2);
  auto acked = Ack({"3", "4"});
  Complete(*second);
  EXPECT_THAT(second->ids(), ElementsAre("3", "4", "1", "2"));
}

}  // namespace
}  // namespace msgq::manager_test
