#include "engine/message_cache.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Message Msg(std::string id, int64_t priority = 0, int64_t time_next = 0) {
  Message m;
  m.id = std::move(id);
  m.priority = priority;
  m.time_next = time_next;
  return m;
}

std::vector<std::string> Ids(const MessageBatch& batch) {
  std::vector<std::string> ids;
  for (const Message& m : batch) ids.push_back(m.id);
  return ids;
}

TEST(MessageCacheTest, StartsEmpty) {
  MessageCache cache(3);
  EXPECT_TRUE(cache.empty());
  EXPECT_FALSE(cache.full());
  EXPECT_EQ(cache.queued(), 0u);
  EXPECT_EQ(cache.capacity(), 3u);
  EXPECT_THAT(Ids(cache.PopBatch(10)), IsEmpty());
}

TEST(MessageCacheTest, OrdersByPriorityThenTimeNextThenId) {
  MessageCache cache(10);
  ASSERT_EQ(cache.Add(Msg("e", 2, 100)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("d", 1, 300)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("c", 1, 200)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("b", 1, 200)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("a", 1, 400)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("f", 0, 999)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("g", -5, 1000)), MessageCache::AddResult::kAdded);

  EXPECT_EQ(cache.Front().id, "g");
  EXPECT_THAT(Ids(cache.PopBatch(100)),
              ElementsAre("g", "f", "b", "c", "d", "a", "e"));
}

TEST(MessageCacheTest, TimeNextIsOldestFirstNotNewestFirst) {
  // Vitess sends the newest first; msgq the oldest, so nothing starves.
  MessageCache cache(10);
  cache.Add(Msg("new", 0, 2000));
  cache.Add(Msg("old", 0, 1000));
  EXPECT_THAT(Ids(cache.PopBatch(2)), ElementsAre("old", "new"));
}

TEST(MessageCacheTest, AddOfQueuedIdIsAlreadyPresentAndKeepsTheFirst) {
  MessageCache cache(10);
  ASSERT_EQ(cache.Add(Msg("a", 5, 100)), MessageCache::AddResult::kAdded);
  EXPECT_EQ(cache.Add(Msg("a", 0, 0)),
            MessageCache::AddResult::kAlreadyPresent);
  EXPECT_EQ(cache.queued(), 1u);
  const MessageBatch batch = cache.PopBatch(10);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].priority, 5);
  EXPECT_EQ(batch[0].time_next, 100);
}

TEST(MessageCacheTest, FullAtCapacity) {
  MessageCache cache(2);
  EXPECT_EQ(cache.Add(Msg("a")), MessageCache::AddResult::kAdded);
  EXPECT_FALSE(cache.full());
  EXPECT_EQ(cache.Add(Msg("b")), MessageCache::AddResult::kAdded);
  EXPECT_TRUE(cache.full());
  EXPECT_EQ(cache.Add(Msg("c", -100)), MessageCache::AddResult::kFull);
  EXPECT_FALSE(cache.IsQueued("c"));
  EXPECT_EQ(cache.queued(), 2u);
  // A duplicate is reported as present even when full.
  EXPECT_EQ(cache.Add(Msg("a")), MessageCache::AddResult::kAlreadyPresent);
}

TEST(MessageCacheTest, PoppedMessagesFreeCapacity) {
  MessageCache cache(2);
  cache.Add(Msg("a"));
  cache.Add(Msg("b"));
  ASSERT_EQ(cache.PopBatch(2).size(), 2u);
  EXPECT_FALSE(cache.full());
  EXPECT_EQ(cache.Add(Msg("c")), MessageCache::AddResult::kAdded);
  EXPECT_EQ(cache.Add(Msg("d")), MessageCache::AddResult::kAdded);
  EXPECT_EQ(cache.Add(Msg("e")), MessageCache::AddResult::kFull);
  // A popped id is no longer the cache's: it may be queued again.
  EXPECT_EQ(cache.PopBatch(1).size(), 1u);
  EXPECT_EQ(cache.Add(Msg("a")), MessageCache::AddResult::kAdded);
}

TEST(MessageCacheTest, PopBatchTakesTheBest) {
  MessageCache cache(10);
  for (const char* id : {"c", "a", "d", "b"}) cache.Add(Msg(id));
  const MessageBatch batch = cache.PopBatch(3);
  EXPECT_THAT(Ids(batch), ElementsAre("a", "b", "c"));
  EXPECT_EQ(cache.queued(), 1u);
  for (const char* id : {"a", "b", "c"}) EXPECT_FALSE(cache.IsQueued(id)) << id;
  EXPECT_TRUE(cache.IsQueued("d"));
  EXPECT_EQ(cache.Front().id, "d");
  EXPECT_THAT(Ids(cache.PopBatch(3)), ElementsAre("d"));
  EXPECT_TRUE(cache.empty());
}

TEST(MessageCacheTest, PopBatchKeepsMessageContents) {
  MessageCache cache(10);
  Message m = Msg("a", 3, 42);
  m.epoch = 7;
  auto row = std::make_shared<PackedRow>();
  row->lengths = {1, 5};
  row->values = "ahello";
  m.row = row;
  cache.Add(m);
  const MessageBatch batch = cache.PopBatch(1);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].id, "a");
  EXPECT_EQ(batch[0].priority, 3);
  EXPECT_EQ(batch[0].time_next, 42);
  EXPECT_EQ(batch[0].epoch, 7);
  EXPECT_EQ(batch[0].row, row);  // shared, not copied
}

TEST(MessageCacheTest, PopBatchOfZeroTakesNothing) {
  MessageCache cache(10);
  cache.Add(Msg("a"));
  EXPECT_THAT(Ids(cache.PopBatch(0)), IsEmpty());
  EXPECT_EQ(cache.queued(), 1u);
}

TEST(MessageCacheTest, RemoveQueued) {
  MessageCache cache(2);
  cache.Add(Msg("a"));
  cache.Add(Msg("b"));
  EXPECT_TRUE(cache.RemoveQueued("a"));
  EXPECT_FALSE(cache.IsQueued("a"));
  EXPECT_EQ(cache.queued(), 1u);
  EXPECT_FALSE(cache.full());
  EXPECT_FALSE(cache.RemoveQueued("a"));
  EXPECT_FALSE(cache.RemoveQueued("zzz"));
  // A popped id is not queued any more.
  ASSERT_THAT(Ids(cache.PopBatch(1)), ElementsAre("b"));
  EXPECT_FALSE(cache.RemoveQueued("b"));
  // A removed id can be added again.
  EXPECT_EQ(cache.Add(Msg("a")), MessageCache::AddResult::kAdded);
}

}  // namespace
}  // namespace msgq
