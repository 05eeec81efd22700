// SerialWorker: runs closures one at a time, in order, on a thread of its
// own, started by the first Post(). For rare work that blocks on MySQL and
// must not run on a gRPC reaction (e.g. Engine::SetPaused's write).
// Post() queues without bound, for work whose count its callers bound;
// TryPost() refuses past a given queue length, for work a client asks for.
//
// Thread-safe. The destructor runs what is still queued, then joins.
#ifndef MSGQ_ENGINE_SERIAL_WORKER_H_
#define MSGQ_ENGINE_SERIAL_WORKER_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace msgq {

class SerialWorker {
 public:
  SerialWorker() = default;
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;
  ~SerialWorker() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }

  void Post(std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    PushLocked(std::move(fn));
  }
  // Queues `fn` unless `max_queued` closures already wait (the one running
  // not counted); false then, and `fn` is dropped unrun.
  bool TryPost(std::function<void()> fn, size_t max_queued) {
    absl::MutexLock lock(&mu_);
    if (queue_.size() >= max_queued) return false;
    PushLocked(std::move(fn));
    return true;
  }

 private:
  void PushLocked(std::function<void()> fn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.AssertHeld();
    queue_.push_back(std::move(fn));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }

  void Run() {
    while (true) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || !queue_.empty();
        };
        mu_.Await(absl::Condition(&ready));
        if (queue_.empty()) return;  // stopping, nothing left
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // set under mu_, joined by the destructor
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SERIAL_WORKER_H_
