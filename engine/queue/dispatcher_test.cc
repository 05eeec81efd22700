#include "engine/queue/dispatcher.h"

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

class NullSubscriber final : public Subscriber {
 public:
  void Send(uint64_t, MessageBatch) override {}
  void Close(absl::Status) override {}
};

// The subscriber each Next() picks, as indexes into `subs`, until none.
std::vector<int> Picks(Dispatcher& d,
                       const std::vector<std::shared_ptr<Subscriber>>& subs,
                       int max) {
  std::vector<int> out;
  for (int i = 0; i < max; ++i) {
    std::optional<Dispatcher::Pick> p = d.Next();
    if (!p.has_value()) break;
    for (size_t j = 0; j < subs.size(); ++j) {
      if (subs[j] == p->subscriber) out.push_back(static_cast<int>(j));
    }
  }
  return out;
}

std::vector<std::shared_ptr<Subscriber>> Make(int n) {
  std::vector<std::shared_ptr<Subscriber>> subs;
  for (int i = 0; i < n; ++i)
    subs.push_back(std::make_shared<NullSubscriber>());
  return subs;
}

TEST(DispatcherTest, RoundRobinUntilEveryoneIsBusy) {
  Dispatcher d(2);
  auto subs = Make(3);
  EXPECT_TRUE(d.Add(subs[0]));
  EXPECT_FALSE(d.Add(subs[1]));
  EXPECT_FALSE(d.Add(subs[2]));
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_FALSE(d.HasFreeSlot());
  d.SendDone(subs[1].get());
  EXPECT_TRUE(d.HasFreeSlot());
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{1}));
}

TEST(DispatcherTest, SequencesNumberEachSubscribersBatches) {
  Dispatcher d(5);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1]);
  std::vector<uint64_t> seq;
  for (int i = 0; i < 4; ++i) seq.push_back(d.Next()->sequence);
  EXPECT_EQ(seq, (std::vector<uint64_t>{0, 0, 1, 1}));
}

TEST(DispatcherTest, FailedSendRemovesTheSubscriberAtOnce) {
  Dispatcher d(2);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1]);
  ASSERT_EQ(Picks(d, subs, 1), (std::vector<int>{0}));
  d.SendFailed(subs[0].get());
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{1, 1}));
  // Late reports about the removed one change nothing.
  d.SendDone(subs[0].get());
  EXPECT_FALSE(d.Remove(subs[0].get()));
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{}));
}

TEST(DispatcherTest, RemovingKeepsTheTurnOfWhoWasNext) {
  Dispatcher d(10);
  auto subs = Make(3);
  for (auto& s : subs) d.Add(s);
  ASSERT_EQ(Picks(d, subs, 2), (std::vector<int>{0, 1}));  // 2 is next
  EXPECT_TRUE(d.Remove(subs[0].get()));
  EXPECT_EQ(Picks(d, subs, 3), (std::vector<int>{2, 1, 2}));
}

TEST(DispatcherTest, TakeAllEmpties) {
  Dispatcher d(1);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[0]);  // no-op
  d.Add(subs[1]);
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.TakeAll().size(), 2u);
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.Next().has_value());
}

MessageBatch Batch(std::vector<std::string> ids) {
  MessageBatch batch;
  for (std::string& id : ids) {
    Message m;
    m.id = std::move(id);
    batch.push_back(std::move(m));
  }
  return batch;
}

TEST(DispatcherTest, MaxUnackedCapsRoomAndReleaseFreesIt) {
  Dispatcher d(2);
  auto subs = Make(2);
  d.Add(subs[0], /*max_unacked=*/3);
  d.Add(subs[1]);  // unlimited
  EXPECT_FALSE(d.holding());

  std::optional<Dispatcher::Pick> p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[0]);
  EXPECT_EQ(p->room, 3u);
  d.Hold(subs[0].get(), Batch({"1", "2"}));
  EXPECT_EQ(d.unacked(subs[0].get()), 2);
  p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[1]);
  EXPECT_EQ(p->room, std::numeric_limits<size_t>::max());
  d.Hold(subs[1].get(), Batch({"9"}));  // unlimited: not counted
  EXPECT_FALSE(d.Release("9"));
  p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->room, 1u);
  d.Hold(subs[0].get(), Batch({"3"}));
  d.SendDone(subs[0].get());
  d.SendDone(subs[0].get());
  // A free batch slot, but no room: skipped like a busy subscriber.
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{1}));
  EXPECT_FALSE(d.Release("unknown"));
  EXPECT_TRUE(d.Release("2"));
  EXPECT_FALSE(d.Release("2"));  // once
  EXPECT_EQ(d.unacked(subs[0].get()), 2);
  p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[0]);
  EXPECT_EQ(p->room, 1u);
}

TEST(DispatcherTest, HoldMovesAnIdAndRemoveDropsHolds) {
  Dispatcher d(2);
  auto subs = Make(2);
  d.Add(subs[0], 5);
  d.Add(subs[1], 5);
  d.Hold(subs[0].get(), Batch({"1", "2"}));
  d.Hold(subs[1].get(), Batch({"2"}));  // sent again, to the other
  EXPECT_EQ(d.unacked(subs[0].get()), 1);
  EXPECT_EQ(d.unacked(subs[1].get()), 1);
  EXPECT_TRUE(d.Remove(subs[0].get()));
  EXPECT_FALSE(d.Release("1"));  // its holds went with it
  EXPECT_TRUE(d.holding());
  EXPECT_TRUE(d.Release("2"));
  EXPECT_FALSE(d.holding());
  EXPECT_EQ(d.unacked(subs[1].get()), 0);
}

TEST(DispatcherTest, ALapsedSubscriberIsPickedOnlyWhenNoOtherIsFree) {
  Dispatcher d(1);
  auto subs = Make(3);
  for (auto& s : subs) d.Add(s);
  d.Hold(subs[1].get(), Batch({"1"}));
  d.DueAgain("1");  // its ack wait ran out while 1 held it
  EXPECT_TRUE(d.lapsed(subs[1].get()));
  EXPECT_FALSE(d.lapsed(subs[0].get()));
  // 0 and 2 first; 1, holding nothing, only once they are busy.
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{0, 2, 1}));
  d.SendDone(subs[0].get());
  d.SendDone(subs[1].get());
  d.SendDone(subs[2].get());
  // Holding a batch, it is not picked again while another is in good
  // standing, even when that one is busy.
  d.Hold(subs[1].get(), Batch({"5"}));
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{2, 0}));
  EXPECT_FALSE(d.HasFreeSlot());
  d.SendDone(subs[1].get());
  EXPECT_FALSE(d.HasFreeSlot());
  // An ack of what it holds brings it back.
  EXPECT_TRUE(d.Release("5"));  // it may take a batch again
  EXPECT_FALSE(d.lapsed(subs[1].get()));
  EXPECT_EQ(Picks(d, subs, 10), (std::vector<int>{1}));
}

TEST(DispatcherTest, AnExtendBringsALapsedSubscriberBackAResendDoesNot) {
  Dispatcher d(5);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1]);
  d.Hold(subs[0].get(), Batch({"1", "2", "3"}));
  d.DueAgain("1");
  EXPECT_TRUE(d.lapsed(subs[0].get()));
  d.Extended("2");
  EXPECT_FALSE(d.lapsed(subs[0].get()));
  d.DueAgain("2");
  EXPECT_TRUE(d.lapsed(subs[0].get()));
  d.Hold(subs[1].get(), Batch({"3"}));  // sent again, to the other
  EXPECT_TRUE(d.lapsed(subs[0].get()));
  d.Release("3");  // acked: the new holder's, not 0's
  EXPECT_TRUE(d.lapsed(subs[0].get()));
  d.Release("1");  // acked after it came due again: 0 no longer holds it
  EXPECT_TRUE(d.lapsed(subs[0].get()));
}

TEST(DispatcherTest, EveryoneLapsedIsPlainRoundRobin) {
  Dispatcher d(5);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1]);
  d.Hold(subs[0].get(), Batch({"1"}));
  d.Hold(subs[1].get(), Batch({"2"}));
  d.DueAgain("1");
  d.DueAgain("2");
  d.Hold(subs[0].get(), Batch({"3"}));
  EXPECT_EQ(Picks(d, subs, 4), (std::vector<int>{0, 1, 0, 1}));
}

// Two subscribers, one message each, both due again: each message goes to
// the other subscriber.
TEST(DispatcherTest, AMessageDueAgainIsRedirectedAwayFromItsHolder) {
  Dispatcher d(2);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1]);
  d.Hold(subs[0].get(), Batch({"1"}));
  d.Hold(subs[1].get(), Batch({"2"}));
  d.DueAgain("1");
  d.DueAgain("2");
  std::optional<Dispatcher::Pick> p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[0]);
  EXPECT_TRUE(p->redirect);
  EXPECT_TRUE(d.Redirects(*p, "1"));
  EXPECT_FALSE(d.Redirects(*p, "2"));
  EXPECT_FALSE(d.Redirects(*p, "3"));
  d.Hold(subs[0].get(), Batch({"2"}));
  p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[1]);
  EXPECT_TRUE(p->redirect);
  EXPECT_FALSE(d.Redirects(*p, "2"));  // sent again since
  EXPECT_FALSE(d.Redirects(*p, "1"));  // 0 had it, not 1
}

TEST(DispatcherTest, NoRedirectWithoutAnotherSubscriberThatCanTakeIt) {
  Dispatcher d(1);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Hold(subs[0].get(), Batch({"1"}));
  d.DueAgain("1");
  std::optional<Dispatcher::Pick> p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->redirect);  // alone: it goes back to the one that had it
  EXPECT_FALSE(d.Redirects(*p, "1"));
  d.Return(*p);
  d.Add(subs[1]);
  ASSERT_EQ(Picks(d, subs, 1), (std::vector<int>{1}));  // 1 is now busy
  p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[0]);
  EXPECT_FALSE(p->redirect);
}

TEST(DispatcherTest, ReturnGivesTheSlotAndSequenceBack) {
  Dispatcher d(1);
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1]);
  std::optional<Dispatcher::Pick> p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->sequence, 0u);
  d.Return(*p);
  // The turn moved on; subscriber 0's slot and sequence 0 are free again.
  p = d.Next();
  EXPECT_EQ(p->subscriber, subs[1]);
  p = d.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->subscriber, subs[0]);
  EXPECT_EQ(p->sequence, 0u);
}

TEST(DispatcherTest, SweepForgetsOldHoldsButNotPrefetchOnes) {
  Dispatcher d(1, absl::Seconds(10));
  auto subs = Make(2);
  d.Add(subs[0]);
  d.Add(subs[1], /*max_unacked=*/2);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  d.Sweep(t0);
  d.Hold(subs[0].get(), Batch({"1"}));
  d.Hold(subs[1].get(), Batch({"2"}));
  d.Sweep(t0 + absl::Seconds(9));  // not yet a horizon
  d.Sweep(t0 + absl::Seconds(10));
  d.DueAgain("1");  // one horizon old: still known
  EXPECT_TRUE(d.lapsed(subs[0].get()));
  d.Hold(subs[0].get(), Batch({"3"}));
  d.Extended("3");
  EXPECT_FALSE(d.lapsed(subs[0].get()));
  d.Sweep(t0 + absl::Seconds(20));
  d.Sweep(t0 + absl::Seconds(30));
  d.DueAgain("3");  // two horizons old: forgotten, so no lapse
  EXPECT_FALSE(d.lapsed(subs[0].get()));
  EXPECT_EQ(d.unacked(subs[1].get()), 1);  // prefetch holds stay
  EXPECT_TRUE(d.Release("2"));
  EXPECT_FALSE(d.holding());
}

}  // namespace
}  // namespace msgq
