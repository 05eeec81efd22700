#include "engine/queue/manager/key_gate.h"

#include <optional>
#include <string>
#include <utility>

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

TEST(KeyGateTest, OffAdmitsEverythingAndNeedsNoLoad) {
  KeyGate gate(0);
  EXPECT_FALSE(gate.on());
  EXPECT_TRUE(gate.ready());
  gate.OwnershipGained();
  EXPECT_TRUE(gate.ready());
  EXPECT_EQ(gate.LoadTicket(), std::nullopt);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(gate.TryTake(Of(std::to_string(i), "a"), 0, 100));
  }
  EXPECT_TRUE(gate.Admits("a", 0));
  EXPECT_FALSE(gate.Release("1"));
  EXPECT_FALSE(gate.ReleaseNacked("2", 0));
  EXPECT_EQ(gate.Room(0, 50), std::nullopt);
  EXPECT_EQ(gate.KeysAtLimit(0), 0);
}

TEST(KeyGateTest, SendsWaitForALoadAfterEachGain) {
  KeyGate gate(1);
  EXPECT_TRUE(gate.on());
  EXPECT_FALSE(gate.ready());  // never loaded
  std::optional<int64_t> ticket = gate.LoadTicket();
  ASSERT_TRUE(ticket.has_value());
  gate.Load({InFlightRow{"a", "1", 1, 500}}, *ticket);
  EXPECT_TRUE(gate.ready());
  EXPECT_EQ(gate.LoadTicket(), std::nullopt);
  // The loaded row holds key a's one slot until its time_next.
  EXPECT_FALSE(gate.Admits("a", 100));
  EXPECT_FALSE(gate.TryTake(Of("2", "a"), 100, 900));
  EXPECT_TRUE(gate.TryTake(Of("3", "b"), 100, 900));
  EXPECT_EQ(gate.KeysAtLimit(100), 2);
  std::optional<KeyRoom> room = gate.Room(100, 50);
  ASSERT_TRUE(room.has_value());
  EXPECT_EQ(room->For("a"), 0);
  EXPECT_EQ(room->For("c"), 1);
  EXPECT_EQ(room->For(std::nullopt), 50);

  // A gain while a load reads: that load does not count.
  gate.OwnershipGained();
  EXPECT_FALSE(gate.ready());
  ticket = gate.LoadTicket();
  ASSERT_TRUE(ticket.has_value());
  gate.OwnershipGained();
  gate.Load({}, *ticket);
  EXPECT_FALSE(gate.ready());
  ticket = gate.LoadTicket();
  ASSERT_TRUE(ticket.has_value());
  gate.Load({}, *ticket);
  EXPECT_TRUE(gate.ready());
  // The slots held before the gains stay.
  EXPECT_EQ(gate.KeysAtLimit(100), 2);
}

TEST(KeyGateTest, ReleasesFreeSlots) {
  KeyGate gate(1);
  gate.Load({}, *gate.LoadTicket());
  EXPECT_TRUE(gate.TryTake(Of("1", "a", 2), 0, 1000));
  EXPECT_FALSE(gate.ReleaseNacked("1", 1));  // an older delivery's nack
  gate.Extend("1", 2, 5000);
  EXPECT_FALSE(gate.Admits("a", 2000));  // extended past 1000
  EXPECT_TRUE(gate.ReleaseNacked("1", 2));
  EXPECT_TRUE(gate.Admits("a", 2000));
  EXPECT_TRUE(gate.TryTake(Of("2", "a"), 0, 1000));
  EXPECT_TRUE(gate.Release("2"));
  EXPECT_FALSE(gate.Release("2"));
}

}  // namespace
}  // namespace msgq
