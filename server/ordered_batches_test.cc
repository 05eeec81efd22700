#include "server/ordered_batches.h"

#include <deque>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(OrderedBatchesTest, StartsEmptyAtSequenceZero) {
  OrderedBatches<std::string> batches;
  EXPECT_FALSE(batches.has_ready());
  EXPECT_EQ(batches.next_sequence(), 0u);
  EXPECT_EQ(batches.ready_size(), 0u);
  EXPECT_EQ(batches.waiting_size(), 0u);
  EXPECT_THAT(batches.TakeAll(), IsEmpty());
}

TEST(OrderedBatchesTest, InOrderItemsAreReadyAtOnce) {
  OrderedBatches<std::string> batches;
  batches.Add(0, "a");
  batches.Add(1, "b");
  EXPECT_EQ(batches.next_sequence(), 2u);
  EXPECT_EQ(batches.ready_size(), 2u);
  EXPECT_EQ(batches.waiting_size(), 0u);
  EXPECT_EQ(batches.PopReady(), "a");
  EXPECT_EQ(batches.PopReady(), "b");
  EXPECT_FALSE(batches.has_ready());
}

TEST(OrderedBatchesTest, AGapHoldsWhatFollowsUntilItArrives) {
  OrderedBatches<std::string> batches;
  batches.Add(2, "c");
  batches.Add(1, "b");
  EXPECT_FALSE(batches.has_ready());
  EXPECT_EQ(batches.next_sequence(), 0u);
  EXPECT_EQ(batches.waiting_size(), 2u);
  batches.Add(0, "a");
  EXPECT_EQ(batches.next_sequence(), 3u);
  EXPECT_EQ(batches.waiting_size(), 0u);
  EXPECT_THAT(batches.TakeReady(), ElementsAre("a", "b", "c"));
  EXPECT_FALSE(batches.has_ready());
}

TEST(OrderedBatchesTest, ReleasesOnlyUpToTheNextGap) {
  OrderedBatches<std::string> batches;
  batches.Add(1, "b");
  batches.Add(3, "d");
  batches.Add(0, "a");
  EXPECT_EQ(batches.next_sequence(), 2u);
  EXPECT_EQ(batches.ready_size(), 2u);
  EXPECT_EQ(batches.waiting_size(), 1u);
  EXPECT_THAT(batches.TakeReady(), ElementsAre("a", "b"));
  batches.Add(2, "c");
  EXPECT_EQ(batches.next_sequence(), 4u);
  EXPECT_THAT(batches.TakeReady(), ElementsAre("c", "d"));
}

// What an ending sink hands back: the ready items, then the waiting ones in
// sequence order (not arrival order).
TEST(OrderedBatchesTest, TakeAllReturnsReadyThenWaitingInSequenceOrder) {
  OrderedBatches<std::string> batches;
  batches.Add(0, "a");
  batches.Add(5, "f");
  batches.Add(3, "d");
  batches.Add(1, "b");
  EXPECT_THAT(batches.TakeAll(), ElementsAre("a", "b", "d", "f"));
  EXPECT_EQ(batches.ready_size(), 0u);
  EXPECT_EQ(batches.waiting_size(), 0u);
  EXPECT_EQ(batches.next_sequence(), 2u);
}

// Outside the contract, pinned so a change is deliberate: a repeated
// waiting sequence keeps the first item; a stale one waits for TakeAll.
TEST(OrderedBatchesTest, RepeatedAndStaleSequences) {
  OrderedBatches<std::string> batches;
  batches.Add(1, "first");
  batches.Add(1, "second");
  EXPECT_EQ(batches.waiting_size(), 1u);
  batches.Add(0, "a");
  EXPECT_THAT(batches.TakeReady(), ElementsAre("a", "first"));
  batches.Add(0, "stale");
  EXPECT_FALSE(batches.has_ready());
  EXPECT_EQ(batches.waiting_size(), 1u);
  EXPECT_THAT(batches.TakeAll(), ElementsAre("stale"));
}

TEST(OrderedBatchesTest, HoldsMoveOnlyItems) {
  OrderedBatches<std::unique_ptr<int>> batches;
  batches.Add(1, std::make_unique<int>(11));
  batches.Add(0, std::make_unique<int>(10));
  ASSERT_EQ(batches.ready_size(), 2u);
  EXPECT_EQ(*batches.PopReady(), 10);
  EXPECT_EQ(*batches.PopReady(), 11);
}

}  // namespace
}  // namespace msgq
