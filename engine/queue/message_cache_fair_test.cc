// MessageCache with msgq_fair_by: start-time fair queuing within a priority.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/queue/message_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

Message Msg(std::string id, std::optional<std::string> key, int64_t time_next,
            int64_t priority = 0) {
  Message m;
  m.id = std::move(id);
  m.fair_key = std::move(key);
  m.time_next = time_next;
  m.priority = priority;
  return m;
}

std::vector<std::string> Ids(const MessageBatch& batch) {
  std::vector<std::string> ids;
  for (const Message& m : batch) ids.push_back(m.id);
  return ids;
}

MessageCache FairCache() { return MessageCache(100, IdKind::kText, true); }

// A x5, B x1, C x2: A B C A C A A A, whatever the interleaving of the keys
// (each key's own messages arrive in its order, as a poll reads them).
TEST(MessageCacheFairTest, AlternatesBetweenKeysForEveryInterleaving) {
  const std::vector<std::vector<Message>> per_key = {
      {Msg("a1", "A", 10), Msg("a2", "A", 11), Msg("a3", "A", 12),
       Msg("a4", "A", 13), Msg("a5", "A", 14)},
      {Msg("b1", "B", 20)},
      {Msg("c1", "C", 30), Msg("c2", "C", 31)}};
  std::vector<int> pattern = {0, 0, 0, 0, 0, 1, 2, 2};  // sorted
  int interleavings = 0;
  do {
    MessageCache cache = FairCache();
    size_t next[3] = {0, 0, 0};
    for (int k : pattern) {
      ASSERT_EQ(cache.Add(per_key[k][next[k]++]),
                MessageCache::AddResult::kAdded);
    }
    EXPECT_THAT(Ids(cache.PopBatch(100)),
                ElementsAre("a1", "b1", "c1", "a2", "c2", "a3", "a4", "a5"))
        << "interleaving " << interleavings;
    ++interleavings;
  } while (std::next_permutation(pattern.begin(), pattern.end()));
  EXPECT_EQ(interleavings, 168);  // 8! / (5! 1! 2!)
}

// One message at a time gives the same order as one batch.
TEST(MessageCacheFairTest, SinglePopsGiveTheSameOrder) {
  MessageCache cache = FairCache();
  for (int i = 1; i <= 5; ++i) {
    cache.Add(Msg("a" + std::to_string(i), "A", 10 + i));
  }
  cache.Add(Msg("b1", "B", 20));
  cache.Add(Msg("c1", "C", 30));
  cache.Add(Msg("c2", "C", 31));
  std::vector<std::string> order;
  while (!cache.empty()) order.push_back(Ids(cache.PopBatch(1)).at(0));
  EXPECT_THAT(order,
              ElementsAre("a1", "b1", "c1", "a2", "c2", "a3", "a4", "a5"));
}

// A message of another key arriving behind a backlog goes in the next round,
// not after the backlog.
TEST(MessageCacheFairTest, ALateKeyGoesNextNotLast) {
  MessageCache cache = FairCache();
  for (int i = 1; i <= 5; ++i) {
    cache.Add(Msg("a" + std::to_string(i), "A", 10 + i));
  }
  EXPECT_THAT(Ids(cache.PopBatch(2)), ElementsAre("a1", "a2"));
  cache.Add(Msg("b1", "B", 50));
  EXPECT_THAT(Ids(cache.PopBatch(100)), ElementsAre("a3", "b1", "a4", "a5"));
}

// A key that went idle starts again at the current round, not at its old
// tag (which would put it ahead) nor behind the backlog.
TEST(MessageCacheFairTest, AKeyThatWentIdleRejoinsTheCurrentRound) {
  MessageCache cache = FairCache();
  for (int i = 1; i <= 6; ++i) {
    cache.Add(Msg("a" + std::to_string(i), "A", 10 + i));
  }
  cache.Add(Msg("b1", "B", 5));
  EXPECT_THAT(Ids(cache.PopBatch(4)), ElementsAre("b1", "a1", "a2", "a3"));
  EXPECT_EQ(cache.fair_keys(), 1u);  // B forgotten once sent
  cache.Add(Msg("b2", "B", 60));
  cache.Add(Msg("b3", "B", 61));
  EXPECT_THAT(Ids(cache.PopBatch(100)),
              ElementsAre("a4", "b2", "a5", "b3", "a6"));
  EXPECT_EQ(cache.fair_keys(), 0u);
}

// Fairness is within a priority: a better priority still goes first.
TEST(MessageCacheFairTest, PriorityComesBeforeFairness) {
  MessageCache cache = FairCache();
  cache.Add(Msg("a1", "A", 10, 1));
  cache.Add(Msg("a2", "A", 11, 1));
  cache.Add(Msg("b1", "B", 12, 1));
  cache.Add(Msg("x1", "X", 40, 0));
  cache.Add(Msg("x2", "X", 41, 0));
  cache.Add(Msg("x3", "X", 42, 0));
  cache.Add(Msg("y1", "Y", 50, 0));
  EXPECT_THAT(Ids(cache.PopBatch(100)),
              ElementsAre("x1", "y1", "x2", "x3", "a1", "b1", "a2"));
}

// Each priority keeps its own round: sends at one priority do not push the
// newcomers of another behind that priority's backlog.
TEST(MessageCacheFairTest, EachPriorityHasItsOwnRound) {
  MessageCache cache = FairCache();
  for (int i = 1; i <= 4; ++i) {
    cache.Add(Msg("a" + std::to_string(i), "A", 10 + i, 1));
  }
  for (int i = 1; i <= 9; ++i) {
    cache.Add(Msg("x" + std::to_string(i), "X", 100 + i, 0));
  }
  EXPECT_EQ(Ids(cache.PopBatch(9)).back(), "x9");
  cache.Add(Msg("b1", "B", 200, 1));
  EXPECT_THAT(Ids(cache.PopBatch(100)),
              ElementsAre("a1", "b1", "a2", "a3", "a4"));
}

// NULL is one key of its own, distinct from the empty string.
TEST(MessageCacheFairTest, NullIsAKeyOfItsOwn) {
  MessageCache cache = FairCache();
  cache.Add(Msg("n1", std::nullopt, 1));
  cache.Add(Msg("n2", std::nullopt, 2));
  cache.Add(Msg("n3", std::nullopt, 3));
  cache.Add(Msg("e1", "", 4));
  cache.Add(Msg("e2", "", 5));
  cache.Add(Msg("z1", "z", 6));
  EXPECT_THAT(Ids(cache.PopBatch(100)),
              ElementsAre("n1", "e1", "z1", "n2", "e2", "n3"));
}

// The per-key state lives only while a key has queued messages.
TEST(MessageCacheFairTest, KeyStateIsBoundedByQueuedMessages) {
  MessageCache cache = FairCache();
  for (int k = 0; k < 50; ++k) {
    cache.Add(Msg(absl::StrCat("m", k), absl::StrCat("k", k), k));
  }
  EXPECT_EQ(cache.fair_keys(), 50u);
  EXPECT_TRUE(cache.RemoveQueued("m7"));
  EXPECT_EQ(cache.fair_keys(), 49u);
  EXPECT_EQ(cache.PopBatch(9).size(), 9u);
  EXPECT_EQ(cache.fair_keys(), 40u);
  cache.Clear();
  EXPECT_EQ(cache.fair_keys(), 0u);
  // After a Clear the rounds start again.
  cache.Add(Msg("a1", "A", 10));
  cache.Add(Msg("a2", "A", 11));
  cache.Add(Msg("b1", "B", 20));
  EXPECT_THAT(Ids(cache.PopBatch(100)), ElementsAre("a1", "b1", "a2"));
}

// A removed message frees its place in its key's line.
TEST(MessageCacheFairTest, RemovedMessagesDoNotHoldARound) {
  MessageCache cache = FairCache();
  cache.Add(Msg("a1", "A", 10));
  cache.Add(Msg("a2", "A", 11));
  cache.Add(Msg("b1", "B", 20));
  cache.Add(Msg("b2", "B", 21));
  EXPECT_TRUE(cache.RemoveQueued("a1"));
  EXPECT_THAT(Ids(cache.PopBatch(100)), ElementsAre("b1", "a2", "b2"));
}

// Without fair, the fair key is ignored: today's order.
TEST(MessageCacheFairTest, UnfairCacheIgnoresTheKey) {
  MessageCache cache(100, IdKind::kText);
  for (int i = 1; i <= 3; ++i) {
    cache.Add(Msg("a" + std::to_string(i), "A", 10 + i));
  }
  cache.Add(Msg("b1", "B", 20));
  EXPECT_THAT(Ids(cache.PopBatch(100)), ElementsAre("a1", "a2", "a3", "b1"));
  EXPECT_EQ(cache.fair_keys(), 0u);
}

}  // namespace
}  // namespace msgq
