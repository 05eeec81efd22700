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
// Prefetch: a subscriber added with max_unacked > 0 holds at most that many
// messages unacked. Hold() counts the ids of a batch sent to it, Release()
// frees an id's slot (acked, nacked, due again, handed back); a subscriber
// without room is skipped like a busy one, and Pick::room caps its batch.
// Without such subscribers Release() is a branch on an empty map.
//
// Pure bookkeeping: it never calls a Subscriber. Not thread-safe: the
// owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_DISPATCHER_H_
#define MSGQ_ENGINE_QUEUE_DISPATCHER_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "engine/queue/subscriber.h"

namespace msgq {

class Dispatcher {
 public:
  static constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();
  struct Pick {
    std::shared_ptr<Subscriber> subscriber;
    uint64_t sequence = 0;
    // Messages the subscriber may still take (max_unacked less those it
    // holds); unlimited: the maximum size_t.
    size_t room = kUnlimited;
  };

  explicit Dispatcher(int max_outstanding)
      : max_outstanding_(max_outstanding) {}

  // Adds a subscriber (a second Add of the same one is a no-op) that may
  // hold at most `max_unacked` messages unacked (0 = unlimited). Returns
  // true when it is the only one now.
  bool Add(std::shared_ptr<Subscriber> subscriber, int max_unacked = 0);
  // Removes a subscriber and its holds; false when it was not there.
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

  // `batch` was sent to `subscriber`: with a max_unacked, each id holds one
  // of its slots until Released (an id held by another is moved).
  void Hold(const Subscriber* subscriber, const MessageBatch& batch);
  // `id` is held no more; true when that freed a slot.
  bool Release(absl::string_view id) {
    return held_.empty() ? false : ReleaseHeld(id);
  }
  // Whether some subscriber holds messages against a max_unacked.
  bool holding() const { return !held_.empty(); }
  // Messages `subscriber` holds against its max_unacked (0 if unlimited).
  int unacked(const Subscriber* subscriber) const;

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
    int max_unacked = 0;  // 0: unlimited
    int unacked = 0;
    bool Free(int max_outstanding) const {
      return outstanding < max_outstanding &&
             (max_unacked == 0 || unacked < max_unacked);
    }
  };
  Slot* Find(const Subscriber* subscriber);
  bool ReleaseHeld(absl::string_view id);

  const int max_outstanding_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
  // Ids sent to subscribers with a max_unacked, and which one holds each.
  absl::flat_hash_map<std::string, const Subscriber*> held_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_DISPATCHER_H_
