// RoundExecutor: runs the rounds of MySQL work of every message table on a
// fixed number of worker threads, so threads (and, with a connection pool
// sized to match, MySQL connections) do not grow with the number of tables.
//
// A Task (a table's manager) is added once and then asks to run: Wake()
// queues it to run as soon as a worker is free; after each round, the
// deadline RunRound() returns says when it wants to run next without being
// woken (absl::InfiniteFuture(): only when woken). A task is queued at most
// once and run by at most one worker at a time; a Wake() that arrives while
// it runs makes it run again right after. Deadlines are on the clock's
// monotonic reading. An idle task (no deadline, not woken) costs nothing
// but its entry.
//
// Thread-safety: all methods are thread-safe. RunRound is called without
// the executor's lock, so a task may call Wake() from anywhere, including
// while holding its own lock (the executor's lock is taken after the
// task's, never before). Remove() waits for a running round to end, so it
// must not be called from inside that task's RunRound.
#ifndef MSGQ_ENGINE_QUEUE_ROUND_EXECUTOR_H_
#define MSGQ_ENGINE_QUEUE_ROUND_EXECUTOR_H_

#include <deque>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/monotonic_cond_var.h"

namespace msgq {

class RoundExecutor {
 public:
  class Task {
   public:
    virtual ~Task() = default;
    // Runs one round if there is work; returns when to run next (monotonic
    // clock), or absl::InfiniteFuture() to wait for a Wake().
    virtual absl::Time RunRound() = 0;
  };

  // Starts `threads` workers (at least 1).
  RoundExecutor(int threads, Clock* clock);
  // Stops the workers after their current round; tasks are not removed.
  ~RoundExecutor();
  RoundExecutor(const RoundExecutor&) = delete;
  RoundExecutor& operator=(const RoundExecutor&) = delete;

  // Registers `task` (not owned; it must outlive its Remove()) and queues
  // its first round.
  void Add(Task* task);
  // Queues `task` to run as soon as possible. Unknown tasks are ignored.
  void Wake(Task* task);
  // Unregisters `task`, waiting for a round of it in progress to end.
  void Remove(Task* task);

  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  using Timers = std::multimap<absl::Time, Task*>;
  struct Entry {
    std::optional<Timers::iterator> timer;  // its deadline in timers_
    bool queued = false;                    // in ready_
    bool running = false;
    bool rerun = false;     // woken while running
    bool removing = false;  // Remove() waits for the round to end
  };

  void Work();
  // Queues the tasks whose deadline passed.
  void QueueDueLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueLocked(Task* task, Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearTimerLocked(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock* const clock_;
  absl::Mutex mu_;
  MonotonicCondVar work_;   // a task is ready or a deadline may have come
  absl::CondVar finished_;  // a round ended (for Remove)
  absl::flat_hash_map<Task*, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<Task*> ready_ ABSL_GUARDED_BY(mu_);
  // Deadline -> task, at most one per task.
  Timers timers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_ROUND_EXECUTOR_H_
