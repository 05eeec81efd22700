#include "engine/queue/own_echoes.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

RowChange Ack(const std::string& id, const std::string& gtid) {
  RowChange c;
  c.id = id;
  c.time_acked = 1;
  c.newly_acked = true;
  c.gtid = gtid;
  return c;
}

RowChange Postponed(const std::string& id, int64_t time_next,
                    const std::string& gtid) {
  RowChange c;
  c.id = id;
  c.time_next = time_next;
  c.gtid = gtid;
  return c;
}

TEST(OwnEchoesTest, AnEchoIsTheChangeWithTheWritesGtid) {
  OwnEchoes e;
  e.Committed(std::string("0-1-7"), {"a", "b"}, {});
  EXPECT_TRUE(e.AckAwaits("a"));
  EXPECT_EQ(e.size(), 2u);
  // An application's ack of b, committed before msgq's: not msgq's.
  e.Shown("0-1-6");
  EXPECT_FALSE(e.TakeAck(Ack("b", "0-1-6")));
  e.Shown("0-1-7");
  EXPECT_TRUE(e.TakeAck(Ack("a", "0-1-7")));
  EXPECT_FALSE(e.AckAwaits("a"));
  EXPECT_TRUE(e.AckAwaits("b"));  // changed nothing: no echo of it
  // A later transaction of the domain: msgq's write has passed.
  e.Shown("0-1-8");
  EXPECT_FALSE(e.AckAwaits("b"));
  EXPECT_EQ(e.size(), 0u);
}

TEST(OwnEchoesTest, OtherDomainsDoNotPassAWrite) {
  OwnEchoes e;
  e.Committed(std::string("0-1-7"), {}, {Postponement{"a", 50}});
  e.Shown("2-1-900");
  EXPECT_TRUE(e.TakePostpone(Postponed("a", 50, "0-1-7")));
  EXPECT_EQ(e.size(), 0u);
}

TEST(OwnEchoesTest, APostponeIsKnownByItsGtidNotItsTimeNext) {
  OwnEchoes e;
  e.Committed(std::string("0-1-7"), {}, {Postponement{"a", 50}});
  // Same time_next, another transaction (an application's UPDATE).
  EXPECT_FALSE(e.TakePostpone(Postponed("a", 50, "0-1-5")));
  EXPECT_TRUE(e.TakePostpone(Postponed("a", 50, "0-1-7")));
}

TEST(OwnEchoesTest, AWriteReportedAfterItsEchoPassedKeepsNothing) {
  OwnEchoes e;
  e.Shown("0-1-9");
  e.Committed(std::string("0-1-7"), {"a"}, {Postponement{"b", 50}});
  EXPECT_FALSE(e.AckAwaits("a"));
  EXPECT_EQ(e.size(), 0u);
  // Nothing written: no echo comes.
  e.Committed(std::string(""), {"a"}, {});
  EXPECT_FALSE(e.AckAwaits("a"));
}

TEST(OwnEchoesTest, WithoutGtidsTheIdsNextChangeIsMatched) {
  OwnEchoes e;
  e.Committed(std::nullopt, {"a"}, {Postponement{"b", 50}});
  EXPECT_TRUE(e.AckAwaits("a"));
  EXPECT_TRUE(e.TakeAck(Ack("a", "")));
  EXPECT_FALSE(e.TakeAck(Ack("a", "")));                 // used up
  EXPECT_FALSE(e.TakePostpone(Postponed("b", 60, "")));  // newer than it
  EXPECT_FALSE(e.TakePostpone(Postponed("b", 50, "")));  // forgotten then
  e.Committed(std::nullopt, {}, {Postponement{"b", 70}});
  EXPECT_TRUE(e.TakePostpone(Postponed("b", 70, "")));
}

TEST(OwnEchoesTest, TheOldestWritesGoPastTheCapacity) {
  OwnEchoes e(/*capacity=*/2);
  e.Committed(std::nullopt, {"a"}, {});
  e.Committed(std::string("0-1-3"), {"b"}, {});
  e.Committed(std::string("0-1-4"), {"c"}, {});
  EXPECT_FALSE(e.AckAwaits("a"));
  EXPECT_TRUE(e.AckAwaits("b"));
  EXPECT_TRUE(e.AckAwaits("c"));
  EXPECT_EQ(e.size(), 2u);
}

// Rule 7: a change shown before the echo of msgq's write of the row is
// older than it; the echo ends the wait, and so does a later transaction.
TEST(OwnEchoesTest, AChangeBeforeTheWritesEchoIsOlderThanIt) {
  OwnEchoes e;
  e.Committed(std::string("0-1-7"), {}, {}, {Postponement{"a", 50}});
  e.Shown("0-1-6");
  EXPECT_TRUE(e.OlderThanWrite(Postponed("a", 9, "0-1-6")));
  EXPECT_TRUE(e.OlderThanWrite(Postponed("a", 50, "2-1-900")));  // no order
  EXPECT_FALSE(e.OlderThanWrite(Postponed("b", 9, "0-1-6")));
  e.Shown("0-1-7");
  EXPECT_FALSE(e.OlderThanWrite(Postponed("a", 50, "0-1-7")));  // the echo
  EXPECT_FALSE(e.OlderThanWrite(Postponed("a", 9, "0-1-7")));   // used up
  // A write whose row never echoes (it changed nothing of it) waits until
  // its domain passes it.
  e.Committed(std::string("0-1-9"), {}, {}, {Postponement{"c", 60}});
  EXPECT_TRUE(e.OlderThanWrite(Postponed("c", 9, "0-1-8")));
  e.Shown("0-1-10");
  EXPECT_FALSE(e.OlderThanWrite(Postponed("c", 9, "0-1-10")));
  // Its echo (and a later transaction) shown before its result: nothing is
  // kept.
  e.Shown("0-1-11");
  e.Committed(std::string("0-1-10"), {}, {}, {Postponement{"d", 70}});
  EXPECT_FALSE(e.OlderThanWrite(Postponed("d", 9, "0-1-11")));
}

TEST(OwnEchoesTest, WithoutGtidsTheWrittenTimeNextEndsTheWait) {
  OwnEchoes e;
  e.Committed(std::nullopt, {}, {}, {Postponement{"a", 50}});
  e.Committed(std::nullopt, {}, {}, {Postponement{"a", 60}});
  EXPECT_TRUE(e.OlderThanWrite(Postponed("a", 9, "")));
  EXPECT_TRUE(e.OlderThanWrite(Postponed("a", 50, "")));   // the first's echo
  EXPECT_FALSE(e.OlderThanWrite(Postponed("a", 60, "")));  // the latest's
  EXPECT_FALSE(e.OlderThanWrite(Postponed("a", 9, "")));
  // The row shown gone: no echo comes.
  e.Committed(std::nullopt, {}, {}, {Postponement{"b", 50}});
  EXPECT_FALSE(e.OlderThanWrite(Ack("b", "")));
  EXPECT_FALSE(e.OlderThanWrite(Postponed("b", 9, "")));
}

}  // namespace
}  // namespace msgq
