#include "client/bounded_queue.h"

#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(BoundedQueueTest, FifoOrder) {
  BoundedQueue<int> queue(3);
  EXPECT_TRUE(queue.Push(1));
  EXPECT_TRUE(queue.Push(2));
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.Pop(), 1);
  EXPECT_EQ(queue.Pop(), 2);
}

TEST(BoundedQueueTest, PushWaitsForRoom) {
  BoundedQueue<int> queue(1);
  ASSERT_TRUE(queue.Push(1));
  absl::Notification pushed;
  std::thread producer([&] {
    EXPECT_TRUE(queue.Push(2));
    pushed.Notify();
  });
  EXPECT_FALSE(pushed.WaitForNotificationWithTimeout(absl::Milliseconds(20)));
  EXPECT_EQ(queue.Pop(), 1);
  pushed.WaitForNotification();
  EXPECT_EQ(queue.Pop(), 2);
  producer.join();
}

TEST(BoundedQueueTest, CloseWakesBlockedPushAndPopAndDropsItems) {
  BoundedQueue<std::string> full(1);
  ASSERT_TRUE(full.Push("a"));
  std::thread producer([&] { EXPECT_FALSE(full.Push("b")); });
  BoundedQueue<std::string> empty(1);
  std::thread consumer([&] { EXPECT_EQ(empty.Pop(), std::nullopt); });
  EXPECT_EQ(full.Close(), 1u);
  EXPECT_EQ(empty.Close(), 0u);
  producer.join();
  consumer.join();
  EXPECT_FALSE(full.Push("c"));
  EXPECT_EQ(full.Pop(), std::nullopt);
  EXPECT_EQ(full.Close(), 0u);  // idempotent
}

}  // namespace
}  // namespace msgq
