// Dispatcher: the subscribers of one message table, which one gets the
// next batch, and which one holds each message sent.
//
// Each subscriber has a slot with the number of batches handed to it and not
// yet reported written (at most `max_outstanding`: a busy subscriber is
// skipped, never waited for) and the sequence number of its next batch.
// Next() chooses round-robin among the subscribers with a free slot.
// A subscriber whose send failed is removed at once (its stream is ending),
// so it is never offered another batch; a late OnSendDone/Remove of a
// removed subscriber is a no-op.
//
// Holds: Hold() records the subscriber each sent id went to. The id is held
// until it is acked, nacked or gone (Release), comes due again (DueAgain),
// is sent again (to its new subscriber), or its subscriber leaves. Holds of
// subscribers without a max_unacked are also forgotten once older than
// `hold_horizon` (Sweep), so ids acked where the manager cannot see it
// (an UPDATE without the binlog) do not pile up.
//
// Stuck subscribers. A subscriber is not draining when either
//  - its writes do not complete: `max_outstanding` batches not yet written
//    (its socket buffer or its gRPC flow-control window is full). It is
//    skipped until a write completes; or
//  - it lapsed: a message it held came due again (its ack wait ran out
//    with no ack, nack or extend), and it has not acked, nacked or extended
//    a message it holds since. Writes of small batches complete while the
//    client reads nothing (the kernel and gRPC buffer them), so this is
//    what tells such a stream apart. It is back in good standing at the
//    first Release or Extended of an id it holds.
// While some subscriber is in good standing, a lapsed one is picked only
// when no subscriber in good standing has a free slot, and only while it
// holds nothing: one batch at a time, which it acks to come back (or which
// runs out its ack wait too). When every subscriber has lapsed they are
// picked round-robin as usual.
// And a message that came due again avoids the subscriber that held it: a
// Pick for that subscriber `redirect`s it when another subscriber that Next
// would pick as readily has a free slot (Redirects()); the message then
// waits in the cache for that other subscriber's pick. With one subscriber,
// or when all others are busy, it goes back to the one that had it.
//
// Prefetch: a subscriber added with max_unacked > 0 holds at most that many
// messages unacked; a subscriber without room is skipped like a busy one,
// and Pick::room caps its batch. Its holds are never swept.
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
#include "absl/time/time.h"
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
    // Messages that came due again while this subscriber held them should
    // wait for another subscriber (see Redirects).
    bool redirect = false;
  };

  // `hold_horizon`: how long a hold of a subscriber without max_unacked is
  // kept at least (it is forgotten between one and two horizons old).
  explicit Dispatcher(int max_outstanding,
                      absl::Duration hold_horizon = absl::InfiniteDuration())
      : max_outstanding_(max_outstanding), hold_horizon_(hold_horizon) {}

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

  // The next subscriber with a free slot, round-robin, those in good
  // standing first (lapsed ones as above), with one more batch counted
  // against it; nullopt when no subscriber may take a batch now.
  std::optional<Pick> Next();
  // `pick`, the latest Next() of its subscriber, was not used (there was
  // nothing to send it): its batch slot and sequence number are given back.
  // The turn stays with the subscriber after it.
  void Return(const Pick& pick);
  // Whether `id` should not go in `pick`'s batch: it came due again while
  // `pick`'s subscriber held it and pick.redirect is set.
  bool Redirects(const Pick& pick, absl::string_view id) const;

  // `batch` was sent to `subscriber`: each id is held by it (an id held by
  // another is moved, which is not progress of that other).
  void Hold(const Subscriber* subscriber, const MessageBatch& batch);
  // `id` was acked, nacked or is gone: held no more, and its subscriber is
  // in good standing. True when that may let its subscriber take a batch
  // it could not take before (a max_unacked slot freed, or it had lapsed).
  bool Release(absl::string_view id);
  // `id` was extended: its subscriber is in good standing.
  void Extended(absl::string_view id);
  // `id` came due again: held no more; its subscriber lapses, and the id's
  // next send avoids it (Redirects).
  void DueAgain(absl::string_view id);
  // Forgets holds older than the horizon (see above); cheap until one
  // horizon has passed since the last sweep. `now` is monotonic.
  void Sweep(absl::Time now);

  // Whether some message is held.
  bool holding() const { return !held_.empty(); }
  // Messages `subscriber` holds against its max_unacked (0 if unlimited).
  int unacked(const Subscriber* subscriber) const;
  // Whether `subscriber` lapsed (false when it is not there).
  bool lapsed(const Subscriber* subscriber) const;

  // Removes and returns every subscriber (stopping).
  std::vector<std::shared_ptr<Subscriber>> TakeAll();

  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  // Whether Next() would pick a subscriber now.
  bool HasFreeSlot() const;

 private:
  struct Slot {
    std::shared_ptr<Subscriber> subscriber;
    int outstanding = 0;
    uint64_t next_sequence = 0;
    int max_unacked = 0;  // 0: unlimited
    int held = 0;         // ids held (DueAgain ones not counted)
    bool lapsed = false;
    bool Free(int max_outstanding) const {
      return outstanding < max_outstanding &&
             (max_unacked == 0 || held < max_unacked);
    }
  };
  struct HeldId {
    // Holds the id; or, when due_again, held it when it came due again.
    const Subscriber* subscriber = nullptr;
    bool due_again = false;
    uint64_t generation = 0;  // the sweep generation of the hold
  };
  Slot* Find(const Subscriber* subscriber);
  bool AnyInGoodStanding() const;
  // When Next may pick `slot`: 0 first, 1 when no 0 is there, -1 not now.
  // `any_good`: AnyInGoodStanding().
  int Rank(const Slot& slot, bool any_good) const;
  // Whether a subscriber other than slots_[index] ranks as well or better.
  bool HasAlternative(size_t index, bool any_good) const;
  // Drops `it`'s count from its holder; returns that holder's slot (null
  // when gone or not counted).
  Slot* Unhold(const HeldId& held);

  const int max_outstanding_;
  const absl::Duration hold_horizon_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
  // Every id held or due again, and by whom.
  absl::flat_hash_map<std::string, HeldId> held_;
  // Entries of held_ that are due_again.
  size_t due_again_ = 0;
  uint64_t generation_ = 0;
  absl::Time next_sweep_ = absl::InfinitePast();
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_DISPATCHER_H_
