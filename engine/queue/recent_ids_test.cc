#include "engine/queue/recent_ids.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(RecentIdsTest, TakeReturnsTheFirstValueOnce) {
  RecentIds ids(10);
  ids.Put("7", 5);
  ids.Put("7", 9);  // known: keeps 5
  ids.Put("07", 6);
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.Take("7"), 5);
  EXPECT_EQ(ids.Take("7"), std::nullopt);
  EXPECT_EQ(ids.Take("07"), 6);
  EXPECT_EQ(ids.size(), 0u);
}

TEST(RecentIdsTest, TheOldestGoWhenFull) {
  RecentIds ids(3);
  for (int i = 0; i < 5; ++i) ids.Put(std::to_string(i), i);
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.Take("0"), std::nullopt);
  EXPECT_EQ(ids.Take("1"), std::nullopt);
  EXPECT_EQ(ids.Take("2"), 2);
  EXPECT_EQ(ids.Take("3"), 3);
  EXPECT_EQ(ids.Take("4"), 4);
}

TEST(RecentIdsTest, ReAddedIdsTakeANewPlaceInTheOrder) {
  RecentIds ids(2);
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
  RecentIds ids(4);
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
  RecentIds ids(0);
  ids.Put("a", 1);
  EXPECT_EQ(ids.size(), 0u);
  EXPECT_EQ(ids.Take("a"), std::nullopt);
}

}  // namespace
}  // namespace msgq
