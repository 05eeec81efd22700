#include "engine/serial_worker.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

// With one closure running (blocked) and two queued, a bound of 2 refuses
// the third; the queued ones run in order once the first returns, and a
// closure refused never runs.
TEST(SerialWorkerTest, TryPostRefusesPastTheQueueBound) {
  absl::Notification running, release;
  std::vector<int> ran;
  absl::Mutex mu;
  auto record = [&](int n) {
    return [&, n] {
      absl::MutexLock lock(&mu);
      ran.push_back(n);
    };
  };
  {
    SerialWorker worker;
    worker.Post([&] {
      running.Notify();
      release.WaitForNotification();
    });
    running.WaitForNotification();
    EXPECT_TRUE(worker.TryPost(record(1), 2));
    EXPECT_TRUE(worker.TryPost(record(2), 2));
    EXPECT_FALSE(worker.TryPost(record(3), 2));
    worker.Post(record(4));  // Post has no bound
    release.Notify();
  }  // the destructor runs what is queued, then joins
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 4}));
}

}  // namespace
}  // namespace msgq
