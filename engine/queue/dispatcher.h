// Dispatcher: the subscribers of one message table and which one gets the
// next batch.
//
// Each subscriber has a slot with the number of batches handed to it and not
// yet reported written (at most `max_outstanding`: a busy subscriber is
// skipped, never waited for) and the sequence number of its next batch.
// Pick() chooses round-robin among the subscribers with a free slot.
// A subscriber whose send failed is removed at once (its stream is ending),
// so it is never offered another batch; a late OnSendDone/Remove of a
// removed subscriber is a no-op.
//
// Pure bookkeeping: it never calls a Subscriber. Not thread-safe: the
// owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_DISPATCHER_H_
#define MSGQ_ENGINE_QUEUE_DISPATCHER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/queue/subscriber.h"

namespace msgq {

class Dispatcher {
 public:
  struct Pick {
    std::shared_ptr<Subscriber> subscriber;
    uint64_t sequence = 0;
  };

  explicit Dispatcher(int max_outstanding)
      : max_outstanding_(max_outstanding) {}

  // Adds a subscriber (a second Add of the same one is a no-op). Returns
  // true when it is the only one now.
  bool Add(std::shared_ptr<Subscriber> subscriber);
  // Removes a subscriber; false when it was not there.
  bool Remove(const Subscriber* subscriber);
  // A batch of `subscriber` was written: frees one slot.
  void SendDone(const Subscriber* subscriber);
  // A batch of `subscriber` could not be written: its stream is ending, so
  // it is removed.
  void SendFailed(const Subscriber* subscriber) { Remove(subscriber); }

  // The next subscriber with a free slot, round-robin, with one more batch
  // counted against it; nullopt when every subscriber is busy or none is
  // there.
  std::optional<Pick> Next();

  // Removes and returns every subscriber (stopping).
  std::vector<std::shared_ptr<Subscriber>> TakeAll();

  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  // Whether some subscriber could take a batch now.
  bool HasFreeSlot() const;

 private:
  struct Slot {
    std::shared_ptr<Subscriber> subscriber;
    int outstanding = 0;
    uint64_t next_sequence = 0;
  };
  Slot* Find(const Subscriber* subscriber);

  const int max_outstanding_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_DISPATCHER_H_
