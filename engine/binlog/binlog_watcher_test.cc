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

// Behind by now - the last event's timestamp while events arrive; 0 when
// caught up (a heartbeat came), before any event, and when not streaming.
TEST(BinlogWatcherLag, IsTheLastEventsAgeUnlessCaughtUp) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  BinlogWatcher::Status s;
  s.streaming = true;
  EXPECT_EQ(BinlogWatcher::LagSeconds(s, false, now), 0);
  s.last_event_time = absl::FromUnixSeconds(993);
  EXPECT_EQ(BinlogWatcher::LagSeconds(s, false, now), 7);
  EXPECT_EQ(BinlogWatcher::LagSeconds(s, true, now), 0);
  s.last_event_time = absl::FromUnixSeconds(1002);  // the server's clock ahead
  EXPECT_EQ(BinlogWatcher::LagSeconds(s, false, now), 0);
  s.last_event_time = absl::FromUnixSeconds(993);
  s.streaming = false;
  EXPECT_EQ(BinlogWatcher::LagSeconds(s, false, now), 0);
}

}  // namespace
}  // namespace msgq
