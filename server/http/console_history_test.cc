#include "server/http/console_history.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

Engine::TableInfo Table(const std::string& name, int64_t sent, bool counted) {
  Engine::TableInfo t;
  t.keyspace = "msgq";
  t.name = name;
  t.loaded = true;
  t.stats.sent = sent;
  t.stats.acked = sent / 2;
  if (counted) {
    MessageCounts::Counts c;
    c.ready = 1;
    c.scheduled = 2;
    c.in_flight = 3;
    c.dead = 4;
    t.counts = c;
  }
  return t;
}

TEST(ConsoleHistoryTest, KeepsTheLastSamplesOfLoadedTables) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  ConsoleHistory history(nullptr, &clock, {absl::Seconds(10), 3, 2});
  for (int i = 0; i < 4; ++i) {
    history.Record({Table("a", 10 * i, i > 0), Table("b", i, false),
                    Table("c", i, false)});
    clock.Advance(absl::Seconds(10));
  }
  const int64_t s = 1'000'000'000;
  // Three samples kept (the first is gone), oldest first; counted from the
  // second on.
  EXPECT_EQ(history.Get({"msgq", "a"}), (std::vector<ConsoleHistory::Sample>{
                                            {1010 * s, 10, 5, 1, 2, 3, 4},
                                            {1020 * s, 20, 10, 1, 2, 3, 4},
                                            {1030 * s, 30, 15, 1, 2, 3, 4}}));
  EXPECT_EQ(history.Get({"msgq", "b"}).size(), 3u);
  EXPECT_EQ(history.Get({"msgq", "b"}).back(),
            (ConsoleHistory::Sample{1030 * s, 3, 1, -1, -1, -1, -1}));
  // At most two tables: c is not kept.
  EXPECT_TRUE(history.Get({"msgq", "c"}).empty());
  // A table no longer loaded is forgotten; c takes its place.
  Engine::TableInfo broken = Table("b", 0, false);
  broken.loaded = false;
  history.Record({Table("a", 40, true), broken, Table("c", 7, false)});
  EXPECT_TRUE(history.Get({"msgq", "b"}).empty());
  EXPECT_EQ(
      history.Get({"msgq", "c"}),
      (std::vector<ConsoleHistory::Sample>{{1040 * s, 7, 3, -1, -1, -1, -1}}));
  EXPECT_EQ(history.Get({"msgq", "a"}).front().time_ns, 1020 * s);
}

}  // namespace
}  // namespace msgq
