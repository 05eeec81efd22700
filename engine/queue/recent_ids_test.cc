#include "engine/queue/recent_ids.h"

#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(RecentIdsTest, TakeReturnsTheFirstValueOnce) {
  RecentIds ids(10, 100);
  ids.Put("7", 5);
  ids.Put("7", 9);  // known: keeps 5
  ids.Put("07", 6);
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.Take("7"), 5);
  EXPECT_EQ(ids.Take("7"), std::nullopt);
  EXPECT_EQ(ids.Take("07"), 6);
  EXPECT_EQ(ids.size(), 0u);
}

TEST(RecentIdsTest, OldIdsAgeOutWhenANewOneComes) {
  RecentIds ids(10, 100);
  ids.Put("a", 0);
  ids.Put("b", 50);
  ids.Put("c", 150);  // a (150 - 0 > 100) goes, b (100) stays
  EXPECT_EQ(ids.Take("a"), std::nullopt);
  EXPECT_EQ(ids.Take("b"), 50);
  EXPECT_EQ(ids.Take("c"), 150);
}

TEST(RecentIdsTest, TheOldestGoWhenFull) {
  RecentIds ids(3, 1000);
  for (int i = 0; i < 5; ++i) ids.Put(std::to_string(i), i);
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.Take("0"), std::nullopt);
  EXPECT_EQ(ids.Take("1"), std::nullopt);
  EXPECT_EQ(ids.Take("2"), 2);
  EXPECT_EQ(ids.Take("3"), 3);
  EXPECT_EQ(ids.Take("4"), 4);
}

// Only ids dropped for room while still young count as forgotten early;
// ids that aged out do not.
TEST(RecentIdsTest, EvictedYoungIsTheNewestIdDroppedForRoom) {
  RecentIds ids(2, 100);
  EXPECT_EQ(ids.evicted_young(), std::numeric_limits<int64_t>::min());
  ids.Put("a", 0);
  ids.Put("b", 10);
  EXPECT_TRUE(ids.Contains("a"));
  ids.Put("c", 200);  // a and b age out (older than 100)
  EXPECT_EQ(ids.evicted_young(), std::numeric_limits<int64_t>::min());
  ids.Put("d", 210);
  ids.Put("e", 220);  // c dropped for room, 20 old
  EXPECT_EQ(ids.evicted_young(), 200);
  ids.Put("f", 230);  // d dropped for room
  EXPECT_EQ(ids.evicted_young(), 210);
  EXPECT_FALSE(ids.Contains("c"));
  EXPECT_FALSE(ids.Contains("d"));
  EXPECT_TRUE(ids.Contains("e"));
  EXPECT_TRUE(ids.Contains("f"));
}

TEST(RecentIdsTest, ReAddedIdsKeepTheirNewPlaceInTheAgeOrder) {
  RecentIds ids(2, 1000);
  ids.Put("a", 1);
  ids.Erase("a");
  ids.Put("b", 2);
  ids.Put("a", 3);  // a is now newer than b
  ids.Put("c", 4);  // full: b, the oldest live one, goes
  EXPECT_EQ(ids.Take("b"), std::nullopt);
  EXPECT_EQ(ids.Take("a"), 3);
  EXPECT_EQ(ids.Take("c"), 4);
}

TEST(RecentIdsTest, ManyPutsAndTakesStayBounded) {
  RecentIds ids(4, 1 << 30);
  for (int i = 0; i < 100000; ++i) {
    ids.Put(std::to_string(i), i);
    if (i % 3 != 0) ids.Erase(std::to_string(i));
  }
  EXPECT_EQ(ids.size(), 4u);
  // The four newest multiples of 3 below 100000.
  EXPECT_EQ(ids.Take("99999"), 99999);
  EXPECT_EQ(ids.Take("99996"), 99996);
  EXPECT_EQ(ids.Take("99993"), 99993);
  EXPECT_EQ(ids.Take("99990"), 99990);
}

TEST(RecentIdsTest, ZeroCapacityRemembersNothing) {
  RecentIds ids(0, 100);
  ids.Put("a", 1);
  EXPECT_EQ(ids.size(), 0u);
  EXPECT_EQ(ids.Take("a"), std::nullopt);
}

}  // namespace
}  // namespace msgq
