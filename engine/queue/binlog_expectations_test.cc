#include "engine/queue/binlog_expectations.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(BinlogExpectationsTest, NothingExpectedAcceptsAnyRead) {
  BinlogExpectations e(10, 100);
  EXPECT_TRUE(e.Accept("7", 50, 0, 0));
  EXPECT_EQ(e.size(), 0u);
}

TEST(BinlogExpectationsTest, OnlyTheExpectedRowIsAcceptedAndThatOnce) {
  BinlogExpectations e(10, 100);
  e.ExpectRow("7", 0, 1000, 5);
  EXPECT_FALSE(e.Accept("7", 50, 1000, 6));  // the old priority
  EXPECT_FALSE(e.Accept("7", 0, 0, 6));      // the old time_next
  EXPECT_EQ(e.size(), 1u);
  EXPECT_TRUE(e.Accept("7", 0, 1000, 7));
  EXPECT_EQ(e.size(), 0u);
  EXPECT_TRUE(e.Accept("7", 50, 0, 8));  // fulfilled: nothing expected now
}

TEST(BinlogExpectationsTest, ALaterChangeReplacesAnEarlierOne) {
  BinlogExpectations e(10, 100);
  e.ExpectRow("7", 50, 0, 1);
  e.ExpectRow("7", 1, 2000, 2);
  EXPECT_FALSE(e.Accept("7", 50, 0, 3));
  EXPECT_TRUE(e.Accept("7", 1, 2000, 3));
  e.ExpectGone("8", 4);
  e.ExpectRow("8", 50, 0, 5);  // inserted again after a delete
  EXPECT_TRUE(e.Accept("8", 50, 0, 6));
}

TEST(BinlogExpectationsTest, GoneRejectsEveryReadUntilItAgesOut) {
  BinlogExpectations e(10, 100);
  e.ExpectGone("7", 0);
  EXPECT_FALSE(e.Accept("7", 50, 0, 1));
  EXPECT_FALSE(e.Accept("7", 50, 0, 100));  // 100 old: still within max_age
  EXPECT_TRUE(e.Accept("7", 50, 0, 101));
  EXPECT_EQ(e.size(), 0u);
}

TEST(BinlogExpectationsTest, ForgetDropsTheExpectation) {
  BinlogExpectations e(10, 100);
  e.ExpectRow("7", 0, 1000, 0);
  e.Forget("7");
  EXPECT_TRUE(e.Accept("7", 50, 0, 1));
}

TEST(BinlogExpectationsTest, TheOldestGoWhenFull) {
  BinlogExpectations e(3, 1000);
  for (int i = 0; i < 5; ++i) e.ExpectGone(std::to_string(i), i);
  EXPECT_EQ(e.size(), 3u);
  EXPECT_TRUE(e.Accept("0", 0, 0, 5));
  EXPECT_TRUE(e.Accept("1", 0, 0, 5));
  EXPECT_FALSE(e.Accept("2", 0, 0, 5));
  EXPECT_FALSE(e.Accept("4", 0, 0, 5));
}

TEST(BinlogExpectationsTest, AReplacedIdTakesItsNewPlaceInTheAgeOrder) {
  BinlogExpectations e(2, 1000);
  e.ExpectGone("a", 1);
  e.ExpectGone("b", 2);
  e.ExpectGone("a", 3);  // a is now newer than b
  e.ExpectGone("c", 4);  // full: b goes
  EXPECT_TRUE(e.Accept("b", 0, 0, 5));
  EXPECT_FALSE(e.Accept("a", 0, 0, 5));
  EXPECT_FALSE(e.Accept("c", 0, 0, 5));
}

TEST(BinlogExpectationsTest, ManyChangesStayBounded) {
  BinlogExpectations e(4, 1 << 30);
  for (int i = 0; i < 100000; ++i) {
    e.ExpectRow(std::to_string(i % 7), 0, i, i);
    if (i % 3 == 0) e.Forget(std::to_string(i % 7));
  }
  EXPECT_LE(e.size(), 4u);
}

}  // namespace
}  // namespace msgq
