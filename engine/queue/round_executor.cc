#include "engine/queue/round_executor.h"

#include <algorithm>

namespace msgq {

RoundExecutor::RoundExecutor(int threads, Clock* clock) : clock_(clock) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

RoundExecutor::~RoundExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_.SignalAll();
  }
  for (std::thread& t : workers_) t.join();
}

void RoundExecutor::ClearTimerLocked(Entry& entry) {
  mu_.AssertHeld();
  if (!entry.timer.has_value()) return;
  timers_.erase(*entry.timer);
  entry.timer.reset();
}

void RoundExecutor::QueueLocked(Task* task, Entry& entry) {
  mu_.AssertHeld();
  ClearTimerLocked(entry);
  if (entry.removing) return;
  if (entry.running) {
    entry.rerun = true;
    return;
  }
  if (entry.queued) return;
  entry.queued = true;
  ready_.push_back(task);
  work_.Signal();
}

void RoundExecutor::Add(Task* task) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = entries_.try_emplace(task);
  QueueLocked(task, it->second);
}

void RoundExecutor::Wake(Task* task) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(task);
  if (it != entries_.end()) QueueLocked(task, it->second);
}

void RoundExecutor::Remove(Task* task) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(task);
  if (it == entries_.end()) return;
  it->second.removing = true;
  ClearTimerLocked(it->second);
  while (it->second.running) {
    finished_.Wait(&mu_);
    it = entries_.find(task);
  }
  ClearTimerLocked(it->second);
  entries_.erase(it);
  ready_.erase(std::remove(ready_.begin(), ready_.end(), task), ready_.end());
}

void RoundExecutor::QueueDueLocked(absl::Time now) {
  mu_.AssertHeld();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    Task* task = timers_.begin()->second;
    QueueLocked(task, entries_.at(task));  // clears the timer
  }
}

void RoundExecutor::Work() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    QueueDueLocked(clock_->MonotonicNow());
    if (ready_.empty()) {
      const absl::Time next =
          timers_.empty() ? absl::InfiniteFuture() : timers_.begin()->first;
      work_.WaitFor(&mu_, next - clock_->MonotonicNow());
      continue;
    }
    Task* task = ready_.front();
    ready_.pop_front();
    Entry& entry = entries_[task];
    entry.queued = false;
    entry.running = true;
    mu_.Unlock();
    const absl::Time next = task->RunRound();
    mu_.Lock();
    auto it = entries_.find(task);  // entries_ may have rehashed
    it->second.running = false;
    if (it->second.rerun) {
      it->second.rerun = false;
      QueueLocked(task, it->second);
    } else if (next != absl::InfiniteFuture() && !it->second.removing) {
      it->second.timer = timers_.emplace(next, task);
      // Another worker may be sleeping past this deadline.
      work_.Signal();
    }
    finished_.SignalAll();
  }
}

}  // namespace msgq
