#include "engine/queue/round_executor.h"

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

// Counts its rounds and how many run at once (across all CountingTasks
// sharing `concurrency`).
class CountingTask final : public RoundExecutor::Task {
 public:
  struct Shared {
    std::atomic<int> running{0};
    std::atomic<int> max_running{0};
  };
  CountingTask(Shared* shared, absl::Duration work,
               absl::Time next = absl::InfiniteFuture())
      : shared_(shared), work_(work), next_(next) {}

  absl::Time RunRound() override {
    const int now = ++shared_->running;
    int seen = shared_->max_running.load();
    while (now > seen &&
           !shared_->max_running.compare_exchange_weak(seen, now)) {
    }
    if (++inside_ > 1) overlapped = true;
    absl::SleepFor(work_);
    --inside_;
    --shared_->running;
    const int n = ++rounds;
    if (on_round) on_round(n);
    return n < max_deadline_rounds ? next_fn() : absl::InfiniteFuture();
  }

  std::atomic<int> rounds{0};
  std::atomic<bool> overlapped{false};
  std::function<void(int)> on_round;
  std::function<absl::Time()> next_fn = [this] { return next_; };
  int max_deadline_rounds = 1 << 30;

 private:
  Shared* const shared_;
  const absl::Duration work_;
  const absl::Time next_;
  std::atomic<int> inside_{0};
};

bool WaitFor(const std::function<bool()>& f, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!f()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

TEST(RoundExecutorTest, AddRunsOnceAndWakesCoalesceWhileQueued) {
  CountingTask::Shared shared;
  RoundExecutor executor(1, RealClock::Get());
  // Keep the only worker busy so the wakes below find the task queued.
  absl::Notification release;
  CountingTask blocker(&shared, absl::ZeroDuration());
  blocker.on_round = [&](int) { release.WaitForNotification(); };
  executor.Add(&blocker);
  // The blocker is inside on_round (after its ++rounds). On a timeout let it
  // go before failing, or the executor's destructor would wait forever.
  if (!WaitFor([&] { return blocker.rounds.load() == 1; }, absl::Seconds(5))) {
    release.Notify();
    FAIL() << "the blocker never ran";
  }
  CountingTask task(&shared, absl::ZeroDuration());
  executor.Add(&task);
  executor.Wake(&task);
  executor.Wake(&task);
  release.Notify();
  ASSERT_TRUE(
      WaitFor([&] { return task.rounds.load() == 1; }, absl::Seconds(5)));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(task.rounds.load(), 1);
  executor.Remove(&task);
  executor.Remove(&blocker);
}

TEST(RoundExecutorTest, WakeDuringARoundRunsItAgainAfter) {
  CountingTask::Shared shared;
  RoundExecutor executor(2, RealClock::Get());
  CountingTask task(&shared, absl::Milliseconds(20));
  task.on_round = [&](int n) {
    if (n == 1) executor.Wake(&task);
  };
  executor.Add(&task);
  ASSERT_TRUE(
      WaitFor([&] { return task.rounds.load() == 2; }, absl::Seconds(5)));
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(task.rounds.load(), 2);
  EXPECT_FALSE(task.overlapped.load());
  executor.Remove(&task);
}

TEST(RoundExecutorTest, ReturnedDeadlineRunsTheTaskAgain) {
  CountingTask::Shared shared;
  RoundExecutor executor(1, RealClock::Get());
  CountingTask task(&shared, absl::ZeroDuration());
  task.next_fn = [] {
    return RealClock::Get()->MonotonicNow() + absl::Milliseconds(30);
  };
  task.max_deadline_rounds = 3;
  const absl::Time start = absl::Now();
  executor.Add(&task);
  ASSERT_TRUE(
      WaitFor([&] { return task.rounds.load() == 3; }, absl::Seconds(5)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(60));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(task.rounds.load(), 3);  // the third asked for no deadline
  executor.Remove(&task);
}

TEST(RoundExecutorTest, NeverMoreRoundsAtOnceThanWorkersNorOneTaskTwice) {
  CountingTask::Shared shared;
  RoundExecutor executor(2, RealClock::Get());
  std::vector<std::unique_ptr<CountingTask>> tasks;
  for (int i = 0; i < 40; ++i) {
    tasks.push_back(
        std::make_unique<CountingTask>(&shared, absl::Milliseconds(2)));
    executor.Add(tasks.back().get());
  }
  for (int wave = 0; wave < 5; ++wave) {
    for (auto& t : tasks) executor.Wake(t.get());
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& t : tasks) {
          if (t->rounds.load() < 1) return false;
        }
        return shared.running.load() == 0;
      },
      absl::Seconds(20)));
  EXPECT_EQ(shared.max_running.load(), 2);
  for (auto& t : tasks) {
    EXPECT_FALSE(t->overlapped.load());
    executor.Remove(t.get());
  }
}

TEST(RoundExecutorTest, RemoveWaitsForTheRunningRoundAndStopsItsRounds) {
  CountingTask::Shared shared;
  RoundExecutor executor(1, RealClock::Get());
  absl::Notification started;
  CountingTask task(&shared, absl::Milliseconds(100));
  task.next_fn = [] { return RealClock::Get()->MonotonicNow(); };
  task.on_round = [&](int) {
    if (!started.HasBeenNotified()) started.Notify();
  };
  executor.Add(&task);
  // on_round runs after the work; wait for the second round to be under way.
  started.WaitForNotification();
  ASSERT_TRUE(
      WaitFor([&] { return shared.running.load() == 1; }, absl::Seconds(5)));
  executor.Remove(&task);
  EXPECT_EQ(shared.running.load(), 0);  // the round had ended
  const int rounds = task.rounds.load();
  absl::SleepFor(absl::Milliseconds(150));
  EXPECT_EQ(task.rounds.load(), rounds);
  executor.Wake(&task);  // unknown now: ignored
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(task.rounds.load(), rounds);
}

}  // namespace
}  // namespace msgq
