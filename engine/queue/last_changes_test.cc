#include "engine/queue/last_changes.h"

#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

BinlogPosition At(uint64_t offset) { return {"binlog.000001", offset}; }

TEST(LastChangesTest, AReadBeforeTheChangeIsStaleInItsRow) {
  LastChanges last;
  last.Shown("a", At(100), /*number=*/0, /*reading=*/false);
  EXPECT_TRUE(last.Stale("a", /*read=*/1, At(60)));
  EXPECT_FALSE(last.Stale("b", 1, At(60)));
  EXPECT_FALSE(last.Stale("a", 1, At(100)));
  EXPECT_FALSE(last.Stale("a", 1, At(150)));
}

TEST(LastChangesTest, AChangeEveryLaterReadIncludesIsForgotten) {
  LastChanges last;
  last.Shown("a", At(100), 0, false);
  last.ReadEnded(At(60), /*returned=*/true, /*last=*/true);
  EXPECT_EQ(last.size(), 1u);  // a read at 60..99 may still start
  last.ReadEnded(At(100), true, true);
  EXPECT_EQ(last.size(), 0u);
  // No read runs and the floor has it: not kept at all.
  last.Shown("b", At(90), 2, false);
  EXPECT_EQ(last.size(), 0u);
  // A failed read says nothing of the floor.
  last.Shown("c", At(120), 3, false);
  last.ReadEnded(At(200), /*returned=*/false, true);
  EXPECT_TRUE(last.Stale("c", 4, At(110)));
}

TEST(LastChangesTest, WhileAReadRunsEveryChangeIsKeptUntilTheLastEnds) {
  LastChanges last;
  last.ReadEnded(At(100), true, true);
  last.Shown("a", At(90), 1, /*reading=*/true);  // another server's order
  EXPECT_EQ(last.size(), 1u);
  last.ReadEnded(At(100), true, /*last=*/false);
  EXPECT_EQ(last.size(), 1u);
  last.ReadEnded(At(100), true, /*last=*/true);
  EXPECT_EQ(last.size(), 0u);
}

TEST(LastChangesTest, WithoutComparablePositionsOnlyChangesDuringTheReadCount) {
  LastChanges last;
  last.Shown("a", At(100), 0, false);
  last.Shown("b", BinlogPosition{}, 2, /*reading=*/true);
  last.Shown("c", BinlogPosition{"other-bin.000001", 5}, 3, true);
  // Read 1 has no position: a (shown before it) is not stale, b and c are.
  EXPECT_FALSE(last.Stale("a", 1, BinlogPosition{}));
  EXPECT_TRUE(last.Stale("b", 1, BinlogPosition{}));
  EXPECT_TRUE(last.Stale("c", 1, BinlogPosition{}));
  // Read 1 at a position: b and c do not compare with it.
  EXPECT_TRUE(last.Stale("a", 1, At(50)));
  EXPECT_TRUE(last.Stale("b", 1, At(50)));
  EXPECT_TRUE(last.Stale("c", 1, At(50)));
  EXPECT_FALSE(last.Stale("c", 4, At(50)));  // shown before read 4 started
  // After a read without a position, a change with no read running is not
  // kept: the reads cannot be compared with it.
  last.ReadEnded(BinlogPosition{}, true, true);
  EXPECT_EQ(last.size(), 0u);
  last.Shown("d", At(300), 5, false);
  EXPECT_FALSE(last.Stale("d", 6, At(250)));
}

TEST(LastChangesTest, PastCapacityTheReadsThatMayBeOlderAreStaleInEveryRow) {
  LastChanges last(/*capacity=*/3);
  for (uint64_t i = 1; i <= 4; ++i) {
    last.Shown(std::to_string(i), At(100 * i), i, /*reading=*/true);
  }
  EXPECT_EQ(last.size(), 1u);  // emptied at the fourth
  // Read 0 ran when the changes were forgotten: any row may be stale.
  EXPECT_TRUE(last.Stale("x", 0, At(1000)));
  // A later read older than the last one forgotten, too.
  EXPECT_TRUE(last.Stale("x", 5, At(399)));
  EXPECT_FALSE(last.Stale("x", 5, At(400)));
  last.ReadEnded(At(399), true, true);
  EXPECT_TRUE(last.Stale("x", 6, At(399)));
  last.ReadEnded(At(400), true, true);
  EXPECT_FALSE(last.Stale("x", 0, At(1)));  // past the mark: forgotten
  EXPECT_EQ(last.size(), 0u);
}

}  // namespace
}  // namespace msgq
