// MessageCache: the in-memory queue of one message table.
//
// Holds up to `capacity` queued messages ordered by priority ascending, then
// time_next ascending, then id (oldest first, so nothing starves; integer ids
// compare as numbers, like MySQL orders an integer column). An id is queued
// at most once. Which ids are in flight (sent or being acked, not settled in
// MySQL) is the SettlementLedger's business: the manager never queues those.
//
// Not thread-safe: the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_MESSAGE_CACHE_H_
#define MSGQ_ENGINE_MESSAGE_CACHE_H_

#include <cstddef>
#include <map>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "engine/message.h"

namespace msgq {

class MessageCache {
 public:
  enum class AddResult {
    kAdded,
    kAlreadyPresent,  // already queued: a no-op
    kFull,            // capacity reached: not added
  };

  explicit MessageCache(size_t capacity) : capacity_(capacity) {}

  AddResult Add(Message message);

  // Removes and returns up to `max` messages, best first.
  MessageBatch PopBatch(size_t max);

  // Removes a queued id (e.g. acked while waiting); false if not queued.
  bool RemoveQueued(absl::string_view id);

  bool IsQueued(absl::string_view id) const { return queued_.contains(id); }
  size_t queued() const { return queued_.size(); }
  size_t capacity() const { return capacity_; }
  bool full() const { return queued_.size() >= capacity_; }
  bool empty() const { return queued_.empty(); }
  // The queued message that would be sent next (requires !empty()).
  const Message& Front() const { return order_.begin()->second; }

 private:
  // priority, time_next, then integer ids (by value) before other ids.
  using Key = std::tuple<int64_t, int64_t, bool, int64_t, std::string>;
  using Order = std::map<Key, Message>;

  static Key KeyOf(const Message& m);

  const size_t capacity_;
  Order order_;
  absl::flat_hash_map<std::string, Order::iterator> queued_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_MESSAGE_CACHE_H_
