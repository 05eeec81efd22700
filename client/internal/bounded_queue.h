// BoundedQueue is a FIFO of at most `capacity` items shared by producer and
// consumer threads, with a shutdown path.
//
// Push() blocks while the queue is full; Pop() blocks while it is empty.
// Close() wakes every waiter: later and blocked Push() calls return false,
// Pop() returns nullopt, and items still queued are discarded (the caller
// decides whether that is safe; for msgq, unsettled messages are redelivered).
//
// Example:
//   BoundedQueue<Message> queue(16);
//   // producer:  if (!queue.Push(std::move(msg))) return;  // closed
//   // consumer:  while (std::optional<Message> m = queue.Pop()) Handle(*m);
//   queue.Close();
//
// Thread-safe.
//
// Internal to the client library (client/internal/ is not installed; the
// public API is client/*.h).
#ifndef MSGQ_CLIENT_INTERNAL_BOUNDED_QUEUE_H_
#define MSGQ_CLIENT_INTERNAL_BOUNDED_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace msgq {

template <typename T>
class BoundedQueue {
 public:
  // A capacity of 0 is treated as 1.
  explicit BoundedQueue(size_t capacity)
      : capacity_(std::max<size_t>(1, capacity)) {}

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Appends `item`, waiting for room. Returns false (dropping `item`) when the
  // queue is or becomes closed.
  bool Push(T item) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedQueue::CanPush));
    if (closed_) return false;
    items_.push_back(std::move(item));
    return true;
  }

  // Removes the oldest item, waiting for one. Returns nullopt when closed.
  std::optional<T> Pop() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedQueue::CanPop));
    if (closed_) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Closes the queue and discards its items. Returns how many were discarded.
  // Idempotent.
  size_t Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    const size_t dropped = items_.size();
    items_.clear();
    return dropped;
  }

  // Closes the queue like Close() and returns its items, oldest first, for
  // the caller to settle. Empty when already closed.
  std::deque<T> CloseAndTake() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    std::deque<T> taken;
    taken.swap(items_);
    return taken;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return items_.size();
  }

 private:
  bool CanPush() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || items_.size() < capacity_;
  }
  bool CanPop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || !items_.empty();
  }

  // Constant after construction.
  const size_t capacity_;

  mutable absl::Mutex mu_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_INTERNAL_BOUNDED_QUEUE_H_
