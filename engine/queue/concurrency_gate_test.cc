#include "engine/queue/concurrency_gate.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

Message Of(const std::string& id, std::optional<std::string> key,
           int64_t epoch = 0) {
  Message m;
  m.id = id;
  m.fair_key = std::move(key);
  m.epoch = epoch;
  return m;
}

TEST(ConcurrencyGateTest, AtMostLimitPerKeyAndNullUnlimited) {
  ConcurrencyGate gate(2);
  EXPECT_TRUE(gate.TryTake(Of("1", "a"), 0, 100));
  EXPECT_TRUE(gate.TryTake(Of("2", "a"), 0, 100));
  EXPECT_FALSE(gate.TryTake(Of("3", "a"), 0, 100));
  EXPECT_TRUE(gate.TryTake(Of("4", "b"), 0, 100));
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(gate.TryTake(Of("n" + std::to_string(i), std::nullopt), 0, 1));
  }
  // "" is a value of its own, not NULL.
  EXPECT_TRUE(gate.TryTake(Of("5", ""), 0, 100));
  EXPECT_EQ(gate.InFlight("a", 0), 2);
  EXPECT_EQ(gate.InFlight("b", 0), 1);
  EXPECT_EQ(gate.InFlight(std::nullopt, 0), 0);
  EXPECT_EQ(gate.InFlight("", 0), 1);
  EXPECT_EQ(gate.KeysAtLimit(0), 1);
  EXPECT_EQ(gate.held(), 4u);
  const KeyRoom room = gate.Room(0, 1000);
  EXPECT_EQ(room.For("a"), 0);
  EXPECT_EQ(room.For("b"), 1);
  EXPECT_EQ(room.For("zz"), 2);
  EXPECT_EQ(room.For(std::nullopt), 1000);
}

TEST(ConcurrencyGateTest, SlotsFreeOnReleaseAndWhenTheirTimeRunsOut) {
  ConcurrencyGate gate(2);
  ASSERT_TRUE(gate.TryTake(Of("1", "a"), 0, 100));
  ASSERT_TRUE(gate.TryTake(Of("2", "a"), 0, 200));
  EXPECT_FALSE(gate.Admits("a", 99));
  EXPECT_TRUE(gate.Admits("a", 100));  // 1's time ran out
  EXPECT_EQ(gate.InFlight("a", 100), 1);
  EXPECT_TRUE(gate.Release("2"));
  EXPECT_FALSE(gate.Release("2"));
  EXPECT_EQ(gate.InFlight("a", 100), 0);
  EXPECT_EQ(gate.held(), 0u);
}

TEST(ConcurrencyGateTest, NackFreesOnlyItsDeliveryAndExtendOnlyLengthens) {
  ConcurrencyGate gate(1);
  ASSERT_TRUE(gate.TryTake(Of("1", "a", 3), 0, 100));
  EXPECT_FALSE(gate.ReleaseNacked("1", 2));
  gate.Extend("1", 2, 500);  // another delivery's: ignored
  gate.Extend("1", 3, 50);   // shorter: ignored
  EXPECT_FALSE(gate.Admits("a", 60));
  gate.Extend("1", 3, 300);
  EXPECT_FALSE(gate.Admits("a", 299));
  EXPECT_TRUE(gate.Admits("a", 300));
  ASSERT_TRUE(gate.TryTake(Of("2", "a", 0), 300, 400));
  EXPECT_TRUE(gate.ReleaseNacked("2", 0));
  EXPECT_EQ(gate.InFlight("a", 300), 0);
}

TEST(ConcurrencyGateTest, LoadedRowsHoldUntilTheirTimeNext) {
  ConcurrencyGate gate(2);
  ASSERT_TRUE(gate.TryTake(Of("1", "a"), 0, 100));
  gate.Load({InFlightRow{"a", "1", 1, 900},  // ours already: left as is
             InFlightRow{"a", "2", 4, 150}, InFlightRow{"b", "3", 1, 120},
             InFlightRow{std::nullopt, "4", 1, 500}});
  EXPECT_EQ(gate.InFlight("a", 0), 2);
  EXPECT_EQ(gate.InFlight("b", 0), 1);
  EXPECT_EQ(gate.held(), 3u);
  EXPECT_EQ(gate.KeysAtLimit(0), 1);
  EXPECT_TRUE(gate.ReleaseNacked("2", 3));  // loaded epoch 4: delivery 3
  EXPECT_EQ(gate.InFlight("a", 100), 0);
  EXPECT_EQ(gate.InFlight("b", 119), 1);
  EXPECT_EQ(gate.InFlight("b", 120), 0);
}

TEST(ConcurrencyGateTest, ResendingAnIdMovesItsSlot) {
  ConcurrencyGate gate(1);
  ASSERT_TRUE(gate.TryTake(Of("1", "a", 0), 0, 100));
  EXPECT_TRUE(gate.TryTake(Of("1", "a", 1), 10, 300));
  EXPECT_EQ(gate.InFlight("a", 200), 1);
  EXPECT_FALSE(gate.ReleaseNacked("1", 0));
  EXPECT_TRUE(gate.ReleaseNacked("1", 1));
}

}  // namespace
}  // namespace msgq
