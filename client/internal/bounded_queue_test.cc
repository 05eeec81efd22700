#include "client/internal/bounded_queue.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

constexpr absl::Duration kWait = absl::Seconds(10);

pid_t ThisThreadId() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Runs `call` on a thread of its own and tells when that thread sleeps inside
// it (Linux: the thread's state in /proc is S). The thread does nothing else
// after announcing its id, so a sleeping thread is one blocked in `call`.
class BlockingCall {
 public:
  template <typename F>
  explicit BlockingCall(F call)
      : thread_([this, call]() mutable {
          tid_.store(ThisThreadId());
          call();
          done_.Notify();
        }) {}
  ~BlockingCall() { thread_.join(); }

  // True once the thread sleeps in the call (up to kWait).
  bool WaitUntilBlocked() {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline) {
      if (done_.HasBeenNotified()) return false;  // did not block
      const pid_t tid = tid_.load();
      if (tid != 0 && State(tid) == 'S') return true;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return false;
  }
  bool done() const { return done_.HasBeenNotified(); }
  bool WaitUntilDone() { return done_.WaitForNotificationWithTimeout(kWait); }

 private:
  static char State(pid_t tid) {
    std::ifstream f(absl::StrCat("/proc/self/task/", tid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size()
               ? '?'
               : stat[paren + 2];
  }

  std::atomic<pid_t> tid_{0};
  absl::Notification done_;
  std::thread thread_;
};

TEST(BoundedQueueTest, FifoOrder) {
  BoundedQueue<int> queue(3);
  EXPECT_TRUE(queue.Push(1));
  EXPECT_TRUE(queue.Push(2));
  EXPECT_TRUE(queue.Push(3));
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue.Pop(), 1);
  EXPECT_EQ(queue.Pop(), 2);
  EXPECT_EQ(queue.Pop(), 3);
  EXPECT_EQ(queue.size(), 0u);
}

TEST(BoundedQueueTest, ABlockedPushIsWokenByAPop) {
  BoundedQueue<int> queue(1);
  ASSERT_TRUE(queue.Push(1));
  bool pushed = false;
  {
    BlockingCall producer([&] { pushed = queue.Push(2); });
    ASSERT_TRUE(producer.WaitUntilBlocked());
    EXPECT_FALSE(producer.done());
    EXPECT_EQ(queue.size(), 1u);
    EXPECT_EQ(queue.Pop(), 1);  // makes room: wakes the producer
    ASSERT_TRUE(producer.WaitUntilDone());
  }
  EXPECT_TRUE(pushed);
  EXPECT_EQ(queue.Pop(), 2);
}

TEST(BoundedQueueTest, ABlockedPopIsWokenByAPush) {
  BoundedQueue<int> queue(1);
  std::optional<int> popped;
  {
    BlockingCall consumer([&] { popped = queue.Pop(); });
    ASSERT_TRUE(consumer.WaitUntilBlocked());
    EXPECT_FALSE(consumer.done());
    EXPECT_TRUE(queue.Push(7));
    ASSERT_TRUE(consumer.WaitUntilDone());
  }
  EXPECT_EQ(popped, 7);
  EXPECT_EQ(queue.size(), 0u);
}

TEST(BoundedQueueTest, CloseWakesBlockedPushAndPopAndDropsItems) {
  BoundedQueue<std::string> full(1);
  ASSERT_TRUE(full.Push("a"));
  BoundedQueue<std::string> empty(1);
  bool pushed = true;
  std::optional<std::string> popped = "unset";
  {
    BlockingCall producer([&] { pushed = full.Push("b"); });
    BlockingCall consumer([&] { popped = empty.Pop(); });
    ASSERT_TRUE(producer.WaitUntilBlocked());
    ASSERT_TRUE(consumer.WaitUntilBlocked());
    EXPECT_EQ(full.Close(), 1u);
    EXPECT_EQ(empty.Close(), 0u);
    ASSERT_TRUE(producer.WaitUntilDone());
    ASSERT_TRUE(consumer.WaitUntilDone());
  }
  EXPECT_FALSE(pushed);
  EXPECT_EQ(popped, std::nullopt);
  EXPECT_FALSE(full.Push("c"));
  EXPECT_EQ(full.Pop(), std::nullopt);
  EXPECT_EQ(full.Close(), 0u);  // idempotent
}

}  // namespace
}  // namespace msgq
