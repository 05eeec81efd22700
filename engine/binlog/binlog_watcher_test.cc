#include "engine/binlog/binlog_watcher.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

// Two msgqd in containers have the same pid (1) and often the same
// listen address; their default replica ids must still differ.
TEST(BinlogWatcherServerId, DefaultsDifferBetweenInstancesOfOneHostAndPid) {
  const uint32_t a = BinlogWatcher::DefaultServerId();
  const uint32_t b = BinlogWatcher::DefaultServerId();
  EXPECT_NE(a, b);
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
}

}  // namespace
}  // namespace msgq

namespace msgq {
namespace {

TEST(BinlogWatcherServerId, DerivationUsesEveryInput) {
  const uint32_t base =
      BinlogWatcher::DeriveServerId("host", "[::]:9000", 1, 7);
  EXPECT_EQ(base, BinlogWatcher::DeriveServerId("host", "[::]:9000", 1, 7));
  EXPECT_NE(base, BinlogWatcher::DeriveServerId("host2", "[::]:9000", 1, 7));
  EXPECT_NE(base, BinlogWatcher::DeriveServerId("host", "[::]:9001", 1, 7));
  EXPECT_NE(base, BinlogWatcher::DeriveServerId("host", "[::]:9000", 2, 7));
  EXPECT_NE(base, BinlogWatcher::DeriveServerId("host", "[::]:9000", 1, 8));
  for (uint64_t r = 0; r < 1000; ++r) {
    EXPECT_NE(BinlogWatcher::DeriveServerId("", "", 0, r), 0u);
  }
}

TEST(BinlogWatcherPosition, GoneWhenTheServerIsBehindOrLacksTheDomain) {
  EXPECT_FALSE(BinlogWatcher::PositionGone("", ""));
  EXPECT_FALSE(BinlogWatcher::PositionGone("", "0-1-5"));
  EXPECT_FALSE(BinlogWatcher::PositionGone("0-1-5", "0-1-5"));
  EXPECT_FALSE(BinlogWatcher::PositionGone("0-1-5", "0-1-9"));
  // Failover to a server with another server id: the sequence decides.
  EXPECT_FALSE(BinlogWatcher::PositionGone("0-1-5", "0-2-6"));
  EXPECT_FALSE(BinlogWatcher::PositionGone("0-1-5,1-1-3", "1-1-3, 0-1-5"));
  // RESET MASTER: empty, or counting again from 1.
  EXPECT_TRUE(BinlogWatcher::PositionGone("0-1-5", ""));
  EXPECT_TRUE(BinlogWatcher::PositionGone("0-1-5", "0-1-1"));
  EXPECT_TRUE(BinlogWatcher::PositionGone("0-1-5,1-1-3", "0-1-9"));
  EXPECT_TRUE(BinlogWatcher::PositionGone("0-1-5,1-1-3", "0-1-9,1-1-2"));
}

}  // namespace
}  // namespace msgq
