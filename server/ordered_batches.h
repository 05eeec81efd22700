// OrderedBatches: the in-order buffer between the engine and a port's
// writer. The table's manager numbers the batches it gives one subscriber 0,
// 1, 2, ... (Subscriber::Send), but calls from different engine threads may
// arrive out of that order; this buffer holds each batch until every lower
// number has arrived, then releases it to the ready queue, so the writer
// (the gRPC stream's reactions, the MySQL-protocol connection's thread)
// sees them in sequence order.
//
// Contract:
//   - Add(sequence, item) releases `item`, and then every held item that now
//     follows without a gap, to the back of the ready queue. An item whose
//     sequence has not come yet waits (a gap waits for its batch; nothing
//     times out).
//   - Requires: every sequence is added at most once, and none below
//     next_sequence(). The manager guarantees it (every number arrives,
//     once). A repeated sequence that is still waiting is dropped (the first
//     one stays); one below next_sequence() waits until TakeAll().
//   - TakeAll() empties the buffer, ready items first and then the waiting
//     ones in sequence order: what a sink that is ending hands back to the
//     manager. next_sequence() is unchanged.
//
// Bounded by its caller: a subscriber holds at most the manager's
// max_batches_per_subscriber batches, since a batch's slot frees only once
// it was written or handed back.
//
// Not thread-safe: the owning sink guards it with its own mutex (as
// ABSL_GUARDED_BY(mu_)), so that its other state changes in the same
// critical section.
//
// Example (a sink's Send, under its mutex):
//   batches_.Add(sequence, std::move(batch));
//   while (batches_.has_ready()) Write(batches_.PopReady());
#ifndef MSGQ_SERVER_ORDERED_BATCHES_H_
#define MSGQ_SERVER_ORDERED_BATCHES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

namespace msgq {

template <typename T>
class OrderedBatches {
 public:
  // See the contract above.
  void Add(uint64_t sequence, T item) {
    waiting_.emplace(sequence, std::move(item));
    for (auto it = waiting_.begin();
         it != waiting_.end() && it->first == next_sequence_;
         it = waiting_.erase(it)) {
      ready_.push_back(std::move(it->second));
      ++next_sequence_;
    }
  }

  // True when PopReady() has an item.
  bool has_ready() const { return !ready_.empty(); }

  // Removes and returns the oldest ready item. Requires has_ready().
  T PopReady() {
    T item = std::move(ready_.front());
    ready_.pop_front();
    return item;
  }

  // Removes and returns every ready item, in sequence order (possibly none).
  std::deque<T> TakeReady() {
    std::deque<T> out;
    out.swap(ready_);
    return out;
  }

  // Removes and returns everything held: the ready items, then the waiting
  // ones in sequence order.
  std::deque<T> TakeAll() {
    std::deque<T> out = TakeReady();
    for (auto& [sequence, item] : waiting_) out.push_back(std::move(item));
    waiting_.clear();
    return out;
  }

  // The sequence Add() releases next (0 at first).
  uint64_t next_sequence() const { return next_sequence_; }
  // Items released and not yet taken.
  size_t ready_size() const { return ready_.size(); }
  // Items held for a gap.
  size_t waiting_size() const { return waiting_.size(); }

 private:
  std::deque<T> ready_;
  std::map<uint64_t, T> waiting_;
  uint64_t next_sequence_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_ORDERED_BATCHES_H_
