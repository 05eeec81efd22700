#include "engine/queue/message_cache.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

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

// A message whose row has `bytes` of values in one column.
Message Sized(std::string id, int64_t time_next, size_t bytes) {
  Message m = Msg(std::move(id), 0, time_next);
  auto row = std::make_shared<PackedRow>();
  row->lengths.push_back(static_cast<int64_t>(bytes));
  row->values.assign(bytes, 'x');
  m.row = std::move(row);
  return m;
}

TEST(MessageCacheTest, PopBatchStopsBeforeTheByteCapButNeverReturnsNothing) {
  MessageCache cache(10);
  // WireBytes = values + 10 per column: 110, 90, 1010, 10.
  ASSERT_EQ(cache.Add(Sized("1", 1, 100)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Sized("2", 2, 80)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Sized("3", 3, 1000)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Sized("4", 4, 0)), MessageCache::AddResult::kAdded);
  EXPECT_THAT(Ids(cache.PopBatch(10, 200)), ElementsAre("1", "2"));
  // Larger than the cap on its own: it goes alone.
  EXPECT_THAT(Ids(cache.PopBatch(10, 200)), ElementsAre("3"));
  EXPECT_THAT(Ids(cache.PopBatch(10, 200)), ElementsAre("4"));
}

TEST(MessageCacheTest, HoldsAtMostMaxBytesButAlwaysOneMessage) {
  MessageCache cache(100, IdKind::kSignedInteger, /*fair=*/false,
                     /*max_bytes=*/1000);
  // Larger than max_bytes on its own: taken into an empty cache.
  ASSERT_EQ(cache.Add(Sized("1", 1, 1500)), MessageCache::AddResult::kAdded);
  EXPECT_EQ(cache.bytes(), 1510u);
  EXPECT_TRUE(cache.full());
  EXPECT_EQ(cache.Add(Sized("2", 2, 10)), MessageCache::AddResult::kFull);
  EXPECT_THAT(Ids(cache.PopBatch(10)), ElementsAre("1"));
  EXPECT_EQ(cache.bytes(), 0u);
  // 490 + 490 fit; a third of 30 would pass 1000.
  ASSERT_EQ(cache.Add(Sized("3", 3, 480)), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Sized("4", 4, 480)), MessageCache::AddResult::kAdded);
  EXPECT_FALSE(cache.full());
  EXPECT_EQ(cache.Add(Sized("5", 5, 20)), MessageCache::AddResult::kFull);
  EXPECT_EQ(cache.bytes(), 980u);
  // Whatever leaves gives its bytes back: removed, popped or cleared.
  ASSERT_TRUE(cache.RemoveQueued("3"));
  EXPECT_EQ(cache.bytes(), 490u);
  ASSERT_EQ(cache.Add(Sized("5", 5, 20)), MessageCache::AddResult::kAdded);
  EXPECT_EQ(cache.bytes(), 520u);
  cache.Clear();
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.queued(), 0u);
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
  EXPECT_EQ(cache.queued(), 2u);
  // A duplicate is reported as present even when full.
  EXPECT_EQ(cache.Add(Msg("a")), MessageCache::AddResult::kAlreadyPresent);
  EXPECT_THAT(Ids(cache.PopBatch(10)), ElementsAre("a", "b"));
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

// Never both queued and in flight: a queued id is not in flight, so draining
// the queue never yields an id that was in flight, and the counts add up.
// Text ids that read as the same integer ("7", "07", "+7") with the same
// priority and time_next have distinct order keys: a shared key would make
// the second insert fail silently and leave a queued_ entry pointing at the
// first.
TEST(MessageCacheTest, TextIdsThatReadAsTheSameIntegerAreDistinct) {
  MessageCache cache(10);
  ASSERT_EQ(cache.Add(Msg("7")), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("07")), MessageCache::AddResult::kAdded);
  ASSERT_EQ(cache.Add(Msg("+7")), MessageCache::AddResult::kAdded);
  EXPECT_EQ(cache.queued(), 3u);
  EXPECT_THAT(Ids(cache.PopBatch(10)), UnorderedElementsAre("7", "07", "+7"));
  EXPECT_EQ(cache.queued(), 0u);
}

TEST(MessageCacheTest, TextColumnOrdersIdsBytewise) {
  MessageCache cache(10, IdKind::kText);
  for (const char* id : {"7", "10", "07", "+7", "9"}) {
    ASSERT_EQ(cache.Add(Msg(id)), MessageCache::AddResult::kAdded) << id;
  }
  EXPECT_THAT(Ids(cache.PopBatch(10)), ElementsAre("+7", "07", "10", "7", "9"));
}

TEST(MessageCacheTest, BinaryColumnOrdersIdsBytewise) {
  MessageCache cache(10, IdKind::kBinary);
  for (const char* id : {"9", "10", "07"}) cache.Add(Msg(id));
  EXPECT_THAT(Ids(cache.PopBatch(10)), ElementsAre("07", "10", "9"));
}

TEST(MessageCacheTest, SignedIntegerColumnOrdersIdsByValue) {
  MessageCache cache(10, IdKind::kSignedInteger);
  for (const char* id :
       {"10", "-3", "9", "9223372036854775807", "-9223372036854775808", "0"}) {
    ASSERT_EQ(cache.Add(Msg(id)), MessageCache::AddResult::kAdded) << id;
  }
  EXPECT_THAT(Ids(cache.PopBatch(10)),
              ElementsAre("-9223372036854775808", "-3", "0", "9", "10",
                          "9223372036854775807"));
}

TEST(MessageCacheTest, UnsignedIntegerColumnOrdersIdsByValue) {
  MessageCache cache(10, IdKind::kUnsignedInteger);
  for (const char* id : {"18446744073709551615", "10", "9"}) cache.Add(Msg(id));
  EXPECT_THAT(Ids(cache.PopBatch(10)),
              ElementsAre("9", "10", "18446744073709551615"));
}

// An integer column should only ever hold canonical ids, but after an ALTER
// anything may come back: non-canonical ids stay distinct, after the numbers.
TEST(MessageCacheTest, IntegerColumnKeepsNonCanonicalIdsDistinct) {
  for (IdKind kind : {IdKind::kSignedInteger, IdKind::kUnsignedInteger}) {
    MessageCache cache(10, kind);
    for (const char* id : {"07", "7", "+7", "-0", "x", "8"}) {
      ASSERT_EQ(cache.Add(Msg(id)), MessageCache::AddResult::kAdded) << id;
    }
    EXPECT_THAT(Ids(cache.PopBatch(10)),
                ElementsAre("7", "8", "+7", "-0", "07", "x"));
  }
}

}  // namespace
}  // namespace msgq
