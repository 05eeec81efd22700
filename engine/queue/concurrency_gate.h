// ConcurrencyGate: msgq_concurrency_by's count of the messages of each key
// in flight, so that at most `limit` of one key are out at once.
//
// A message is in flight from its send until it is acked, nacked, handed
// back, read due again, or its slot's time runs out (the caller gives each
// send the earliest time its row can be due again). Rows another msgqd (or
// this one before a restart) sent are Load()ed from MySQL with their
// time_next. NULL keys are not limited and not counted. Keys are compared
// as FairKeyTag (NULL and every value, "" included, distinct).
//
// Example:
//   ConcurrencyGate gate(3);
//   if (gate.TryTake(m, now, now + ack_wait + min_backoff)) send(m);
//   ... gate.Release(m.id);  // acked
//
// Not thread-safe: the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_CONCURRENCY_GATE_H_
#define MSGQ_ENGINE_QUEUE_CONCURRENCY_GATE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "engine/queue/message.h"
#include "engine/queue/message_store.h"

namespace msgq {

class ConcurrencyGate {
 public:
  // `limit` >= 1 (msgq_concurrency).
  explicit ConcurrencyGate(int limit) : limit_(limit) {}

  // Whether one more message of `key` may be sent at `now` (NULL: always).
  bool Admits(const std::optional<std::string>& key, int64_t now);
  // Takes a slot for `m`, sent at `now` and in flight until `until` at the
  // latest, when its key has one free; false (nothing taken) otherwise.
  // A NULL key always succeeds and takes nothing. Sending an id that holds
  // a slot already moves its slot (the count stays).
  bool TryTake(const Message& m, int64_t now, int64_t until);
  // Rows in flight as MySQL showed them (a restart, a lease takeover): each
  // holds a slot until its time_next. Ids holding a slot already are left.
  void Load(const std::vector<InFlightRow>& rows);
  // `id` is in flight no more (acked, deleted, read due again, handed
  // back); true when that freed a slot.
  bool Release(absl::string_view id);
  // A nack of `id`'s delivery with `epoch` (as streamed): frees its slot
  // only when the slot is that delivery's (a late nack of an older one
  // must not free a newer one's); true when it freed one.
  bool ReleaseNacked(absl::string_view id, int64_t epoch);
  // An extend of `id`'s delivery with `epoch`: it stays in flight until at
  // least `until`.
  void Extend(absl::string_view id, int64_t epoch, int64_t until);
  // Forgets every slot (ownership lost; Load again before sending).
  void Clear();

  // Messages of `key` in flight at `now` (0 for NULL).
  int64_t InFlight(const std::optional<std::string>& key, int64_t now);
  // Keys with `limit` messages in flight at `now`.
  int64_t KeysAtLimit(int64_t now) const;
  // What a poll at `now` may read per key; `unlimited` for NULL keys.
  KeyRoom Room(int64_t now, int64_t unlimited);
  // Slots held (expired ones included until the next call that takes `now`).
  size_t held() const { return slots_.size(); }
  int limit() const { return static_cast<int>(limit_); }

 private:
  struct Slot {
    std::string tag;  // FairKeyTag of the key
    int64_t epoch = 0;
    int64_t until = 0;
  };
  using Slots = absl::flat_hash_map<std::string, Slot>;

  // Frees the slots whose time ran out by `now`.
  void Expire(int64_t now);
  void Erase(Slots::iterator it);
  void Insert(const std::string& id, std::string tag, int64_t epoch,
              int64_t until);

  const int64_t limit_;
  Slots slots_;                                         // by id
  absl::flat_hash_map<std::string, int64_t> per_key_;   // by tag, > 0
  std::set<std::pair<int64_t, std::string>> expiries_;  // (until, id)
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_CONCURRENCY_GATE_H_
