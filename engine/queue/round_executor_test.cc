// RoundExecutor on a FakeClock: a deadline comes due only when the test
// advances the clock, and "nothing else runs" is shown by draining a
// one-worker executor with a sentinel task (Drain), not by sleeping.
#include "engine/queue/round_executor.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;

// How long a test waits for an event before it fails.
constexpr absl::Duration kEventTimeout = absl::Seconds(5);

// Counts its rounds and how many run at once (across all CountingTasks
// sharing `Shared`), and when (on `clock`) each round ran.
class CountingTask final : public RoundExecutor::Task {
 public:
  struct Shared {
    absl::Mutex mu;
    int running ABSL_GUARDED_BY(mu) = 0;
    int max_running ABSL_GUARDED_BY(mu) = 0;
  };

  // `work`: how long each round takes (real time; only where rounds must
  // overlap to be caught running at once).
  CountingTask(Shared* shared, const Clock* clock,
               absl::Duration work = absl::ZeroDuration())
      : shared_(shared), clock_(clock), work_(work) {}

  // A round: counted, and its deadline taken, before on_round runs, so a
  // test that saw the count may move the clock.
  absl::Time RunRound() override {
    Enter();
    if (work_ > absl::ZeroDuration()) absl::SleepFor(work_);
    int n = 0;
    {
      absl::MutexLock lock(&mu_);
      n = rounds_ + 1;
      times_.push_back(clock_->MonotonicNow());
    }
    const absl::Time next =
        n < max_deadline_rounds ? next_fn() : absl::InfiniteFuture();
    {
      absl::MutexLock lock(&mu_);
      rounds_ = n;
    }
    if (on_round) on_round(n);
    Leave();
    return next;
  }

  int rounds() {
    absl::MutexLock lock(&mu_);
    return rounds_;
  }
  // True once at least `n` rounds were counted (false after kEventTimeout).
  bool AwaitRounds(int n) {
    absl::MutexLock lock(&mu_);
    awaited_ = n;
    return mu_.AwaitWithTimeout(
        absl::Condition(
            +[](CountingTask* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) {
              return t->rounds_ >= t->awaited_;
            },
            this),
        kEventTimeout);
  }
  // Whether two rounds of this task ever ran at once.
  bool overlapped() {
    absl::MutexLock lock(&mu_);
    return overlapped_;
  }
  // The clock's MonotonicNow() in each round.
  std::vector<absl::Time> times() {
    absl::MutexLock lock(&mu_);
    return times_;
  }

  // Set before the task is added.
  std::function<void(int)> on_round;
  std::function<absl::Time()> next_fn = [] { return absl::InfiniteFuture(); };
  int max_deadline_rounds = 1 << 30;

 private:
  void Enter() {
    {
      absl::MutexLock lock(&shared_->mu);
      ++shared_->running;
      shared_->max_running = std::max(shared_->max_running, shared_->running);
    }
    absl::MutexLock lock(&mu_);
    if (++inside_ > 1) overlapped_ = true;
  }
  void Leave() {
    {
      absl::MutexLock lock(&mu_);
      --inside_;
    }
    absl::MutexLock lock(&shared_->mu);
    --shared_->running;
  }

  Shared* const shared_;
  const Clock* const clock_;
  const absl::Duration work_;
  absl::Mutex mu_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  bool overlapped_ ABSL_GUARDED_BY(mu_) = false;
  int rounds_ ABSL_GUARDED_BY(mu_) = 0;
  int awaited_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<absl::Time> times_ ABSL_GUARDED_BY(mu_);
};

// True once no CountingTask of `shared` runs (false after kEventTimeout).
bool AwaitIdle(CountingTask::Shared& shared) {
  absl::MutexLock lock(&shared.mu);
  return shared.mu.AwaitWithTimeout(
      absl::Condition(
          +[](CountingTask::Shared* s)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) { return s->running == 0; },
          &shared),
      kEventTimeout);
}

// Returns once every task that was queued, or due on the clock, when it
// was called has run its round on `executor`, which must have one worker.
// The worker takes queued tasks in order and queues due ones between two
// rounds, behind a task woken during the first of them: so when the
// sentinel (registered already) has run three more rounds, each woken
// while the one before runs or has just run, everything ahead of it ran.
// False after kEventTimeout.
bool Drain(RoundExecutor& executor, CountingTask& sentinel) {
  const int start = sentinel.rounds();
  for (int i = 1; i <= 3; ++i) {
    executor.Wake(&sentinel);
    if (!sentinel.AwaitRounds(start + i)) return false;
  }
  return true;
}

class RoundExecutorTest : public ::testing::Test {
 protected:
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  CountingTask::Shared shared_;
};

TEST_F(RoundExecutorTest, AddRunsOnceAndWakesCoalesceWhileQueued) {
  RoundExecutor executor(1, &clock_);
  // Keep the only worker busy so the wakes below find the task queued.
  absl::Notification release;
  CountingTask blocker(&shared_, &clock_);
  blocker.on_round = [&](int) { release.WaitForNotification(); };
  executor.Add(&blocker);
  // The blocker is inside on_round (after its round was counted). On a
  // timeout let it go before failing, or the executor's destructor would
  // wait forever.
  if (!blocker.AwaitRounds(1)) {
    release.Notify();
    FAIL() << "the blocker never ran";
  }
  CountingTask task(&shared_, &clock_);
  CountingTask sentinel(&shared_, &clock_);
  executor.Add(&task);
  executor.Wake(&task);
  executor.Wake(&task);
  // Queued behind whatever the three calls above queued.
  executor.Add(&sentinel);
  release.Notify();
  ASSERT_TRUE(sentinel.AwaitRounds(1));
  EXPECT_EQ(task.rounds(), 1);
  executor.Remove(&task);
  executor.Remove(&sentinel);
  executor.Remove(&blocker);
}

TEST_F(RoundExecutorTest, WakeDuringARoundRunsItAgainAfter) {
  RoundExecutor executor(1, &clock_);
  CountingTask task(&shared_, &clock_);
  CountingTask sentinel(&shared_, &clock_);
  task.on_round = [&](int n) {
    if (n == 1) executor.Wake(&task);
  };
  executor.Add(&task);
  ASSERT_TRUE(task.AwaitRounds(2));
  executor.Add(&sentinel);
  ASSERT_TRUE(Drain(executor, sentinel));
  EXPECT_EQ(task.rounds(), 2);
  EXPECT_FALSE(task.overlapped());
  executor.Remove(&task);
  executor.Remove(&sentinel);
}

// With two workers the second one must not take the woken task while the
// first is still running it.
TEST_F(RoundExecutorTest, WakeDuringARoundDoesNotRunItOnAnotherWorker) {
  RoundExecutor executor(2, &clock_);
  CountingTask task(&shared_, &clock_);
  absl::Notification woken;
  absl::Notification release;
  task.on_round = [&](int n) {
    if (n != 1) return;
    executor.Wake(&task);
    woken.Notify();
    // The other worker is idle meanwhile: a wrong rerun would overlap.
    release.WaitForNotification();
  };
  executor.Add(&task);
  if (!woken.WaitForNotificationWithTimeout(kEventTimeout)) {
    release.Notify();
    FAIL() << "the task never ran";
  }
  EXPECT_EQ(task.rounds(), 1);
  release.Notify();
  ASSERT_TRUE(task.AwaitRounds(2));
  EXPECT_FALSE(task.overlapped());
  executor.Remove(&task);
}

TEST_F(RoundExecutorTest, ReturnedDeadlineRunsTheTaskAgainWhenDue) {
  RoundExecutor executor(1, &clock_);
  CountingTask task(&shared_, &clock_);
  CountingTask sentinel(&shared_, &clock_);
  task.next_fn = [this] {
    return clock_.MonotonicNow() + absl::Milliseconds(30);
  };
  task.max_deadline_rounds = 3;
  const absl::Time start = clock_.MonotonicNow();
  executor.Add(&task);
  ASSERT_TRUE(task.AwaitRounds(1));
  executor.Add(&sentinel);
  clock_.Advance(absl::Milliseconds(29));
  ASSERT_TRUE(Drain(executor, sentinel));
  EXPECT_EQ(task.rounds(), 1);  // not due yet
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(task.AwaitRounds(2));
  clock_.Advance(absl::Milliseconds(30));
  ASSERT_TRUE(task.AwaitRounds(3));
  // The third round asked for no deadline: nothing runs it again.
  clock_.Advance(absl::Hours(1));
  ASSERT_TRUE(Drain(executor, sentinel));
  EXPECT_EQ(task.rounds(), 3);
  EXPECT_THAT(task.times(), ElementsAre(start, start + absl::Milliseconds(30),
                                        start + absl::Milliseconds(60)));
  executor.Remove(&task);
  executor.Remove(&sentinel);
}

TEST_F(RoundExecutorTest, NeverMoreRoundsAtOnceThanWorkersNorOneTaskTwice) {
  RoundExecutor executor(2, &clock_);
  std::vector<std::unique_ptr<CountingTask>> tasks;
  for (int i = 0; i < 40; ++i) {
    // Rounds that take a while, so that the two workers overlap.
    tasks.push_back(std::make_unique<CountingTask>(&shared_, &clock_,
                                                   absl::Milliseconds(2)));
    executor.Add(tasks.back().get());
  }
  for (int wave = 0; wave < 5; ++wave) {
    for (auto& t : tasks) executor.Wake(t.get());
  }
  for (auto& t : tasks) ASSERT_TRUE(t->AwaitRounds(1));
  ASSERT_TRUE(AwaitIdle(shared_));
  {
    absl::MutexLock lock(&shared_.mu);
    EXPECT_EQ(shared_.max_running, 2);
  }
  for (auto& t : tasks) {
    EXPECT_FALSE(t->overlapped());
    executor.Remove(t.get());
  }
}

TEST_F(RoundExecutorTest, RemoveWaitsForTheRunningRoundAndStopsItsRounds) {
  RoundExecutor executor(1, &clock_);
  absl::Notification in_round;
  absl::Notification release;
  CountingTask task(&shared_, &clock_);
  CountingTask sentinel(&shared_, &clock_);
  task.next_fn = [this] { return clock_.MonotonicNow(); };  // due at once
  task.on_round = [&](int n) {
    if (n != 2) return;
    in_round.Notify();
    release.WaitForNotification();
  };
  executor.Add(&task);
  if (!in_round.WaitForNotificationWithTimeout(kEventTimeout)) {
    release.Notify();
    FAIL() << "the second round never ran";
  }
  // Remove runs on another thread, as a rule while round 2 is held: it
  // returns only after the round it waits for ended.
  absl::Notification removed;
  bool round_over_when_removed = false;
  std::thread remover([&] {
    executor.Remove(&task);
    round_over_when_removed = release.HasBeenNotified();
    removed.Notify();
  });
  EXPECT_FALSE(removed.HasBeenNotified());
  release.Notify();
  remover.join();
  EXPECT_TRUE(round_over_when_removed);
  // Released before Remove began, it may have run more rounds (each due
  // at once) until then; none after.
  const int rounds = task.rounds();
  EXPECT_GE(rounds, 2);
  // Its deadline (due at once) was dropped, and a Wake is ignored now.
  executor.Add(&sentinel);
  ASSERT_TRUE(Drain(executor, sentinel));
  EXPECT_EQ(task.rounds(), rounds);
  executor.Wake(&task);
  ASSERT_TRUE(Drain(executor, sentinel));
  EXPECT_EQ(task.rounds(), rounds);
  executor.Remove(&sentinel);
}

}  // namespace
}  // namespace msgq
