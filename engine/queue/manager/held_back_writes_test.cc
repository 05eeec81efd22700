#include "engine/queue/manager/held_back_writes.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

using Postpone = HeldBackWrites::Postpone;
using Postpones = std::vector<Postpone>;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kRetry = absl::Milliseconds(250);
constexpr absl::Duration kAckWait = absl::Seconds(30);

PendingAck HeldAck(std::vector<std::string> ids, bool cancelled = false) {
  PendingAck a;
  a.ticket.ids = std::move(ids);
  if (cancelled) a.ticket.cancelled.push_back(Postpone{a.ticket.ids[0], 1});
  return a;
}

TEST(HeldBackWritesTest, CountsRowsAndMovesTheFence) {
  HeldBackWrites h(kRetry, kAckWait);
  EXPECT_EQ(h.fence(), absl::InfinitePast());
  EXPECT_TRUE(h.RowHeld("a", kStart));
  EXPECT_FALSE(h.RowHeld("a", kStart + absl::Seconds(1)));  // its second
  EXPECT_TRUE(h.RowHeld("b", kStart - absl::Seconds(5)));
  EXPECT_EQ(h.rows(), 2u);
  // The latest send's ack wait: the fence never moves back.
  EXPECT_EQ(h.fence(), kStart + absl::Seconds(1) + kAckWait);
  EXPECT_TRUE(h.RowWaiting("a"));
  h.RowFreed("a");
  EXPECT_TRUE(h.RowWaiting("a"));  // one write of it still held back
  h.RowFreed("a");
  EXPECT_FALSE(h.RowWaiting("a"));
  h.RowFreed("zzz");  // never held: nothing happens
  EXPECT_EQ(h.rows(), 1u);
}

TEST(HeldBackWritesTest, PostponesWaitForTheirRetryTime) {
  HeldBackWrites h(kRetry, kAckWait);
  EXPECT_EQ(h.postpones_retry_at(), absl::InfiniteFuture());
  h.HoldPostpone(Postpone{"1", 2});
  h.HoldPostpone(Postpone{"2", 0});
  h.ArmRetries(kStart);
  EXPECT_EQ(h.postpones_retry_at(), kStart + kRetry);
  EXPECT_EQ(h.acks_retry_at(), absl::InfiniteFuture());
  // Held back again before the retry: keeps the first list's time.
  h.HoldPostpone(Postpone{"3", 1});
  h.ArmRetries(kStart + absl::Milliseconds(100));
  EXPECT_EQ(h.postpones_retry_at(), kStart + kRetry);
  EXPECT_EQ(h.TakePostpones(kStart + kRetry - absl::Nanoseconds(1), false),
            Postpones{});
  EXPECT_EQ(h.TakePostpones(kStart + kRetry, false),
            (Postpones{{"1", 2}, {"2", 0}, {"3", 1}}));
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.postpones_retry_at(), absl::InfiniteFuture());
  // Stopping takes them at once.
  h.HoldPostpone(Postpone{"4", 1});
  h.ArmRetries(kStart + absl::Seconds(1));
  EXPECT_EQ(h.TakePostpones(kStart + absl::Seconds(1), /*all=*/true),
            (Postpones{{"4", 1}}));
}

TEST(HeldBackWritesTest, AcksRetryOnTheirOwnClock) {
  HeldBackWrites h(kRetry, kAckWait);
  h.HoldPostpone(Postpone{"1", 1});
  h.ArmRetries(kStart);
  h.HoldAck(HeldAck({"7", "8"}));
  EXPECT_TRUE(h.acks_waiting());
  EXPECT_FALSE(h.AckCancelledPostpone());
  h.ArmRetries(kStart + absl::Milliseconds(100));
  EXPECT_EQ(h.postpones_retry_at(), kStart + kRetry);
  EXPECT_EQ(h.acks_retry_at(), kStart + absl::Milliseconds(350));
  EXPECT_TRUE(h.TakeAcks(kStart + kRetry, false).empty());
  h.HoldAck(HeldAck({"9"}, /*cancelled=*/true));
  EXPECT_TRUE(h.AckCancelledPostpone());
  std::vector<PendingAck> acks =
      h.TakeAcks(kStart + absl::Milliseconds(350), false);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].ticket.ids, (std::vector<std::string>{"7", "8"}));
  EXPECT_EQ(acks[1].ticket.ids, (std::vector<std::string>{"9"}));
  EXPECT_FALSE(h.acks_waiting());
  EXPECT_FALSE(h.AckCancelledPostpone());
  EXPECT_FALSE(h.empty());  // the postpone is still held back
}

TEST(HeldBackWritesTest, GiveUpCountsPostponesAndAckedIds) {
  HeldBackWrites h(kRetry, kAckWait);
  EXPECT_EQ(h.GiveUp(), 0u);
  h.HoldPostpone(Postpone{"1", 1});
  h.HoldAck(HeldAck({"2", "3", "4"}));
  EXPECT_TRUE(h.RowHeld("1", kStart));
  EXPECT_EQ(h.GiveUp(), 4u);
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.rows(), 0u);
  EXPECT_EQ(h.postpones_retry_at(), absl::InfiniteFuture());
  EXPECT_EQ(h.acks_retry_at(), absl::InfiniteFuture());
}

}  // namespace
}  // namespace msgq
