// MessageCache: the in-memory queue of one message table.
//
// Holds up to `capacity` queued messages ordered by priority ascending, then
// time_next ascending, then id (oldest first, so nothing starves). An id is
// queued at most once. Which ids are in flight (sent or being acked, not
// settled in MySQL) is the SettlementLedger's business: the manager never
// queues those.
//
// The id order follows the table's IdKind, not the look of the text: on an
// integer id column, canonical integer ids compare by value (as MySQL orders
// the column); on a text or binary column, ids compare bytewise, so "7", "07"
// and "+7" are three messages. The order key always ends with the id itself,
// so two different ids can never share a key; Add aborts the process when
// that invariant is broken rather than leave a dangling index entry.
//
// Not thread-safe: the owning MessageManager guards it with its mutex. Not
// copyable (it indexes its own map by iterator).
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_CACHE_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/strings/string_view.h"
#include "engine/message_table.h"
#include "engine/queue/message.h"

namespace msgq {

class MessageCache {
 public:
  enum class AddResult {
    kAdded,
    kAlreadyPresent,  // already queued: a no-op
    kFull,            // capacity reached: not added
  };

  // `id_kind` is the table's (MessageTable::id_kind). The default keeps the
  // old order for callers not yet passing it: canonical integers by value,
  // other ids bytewise after them.
  explicit MessageCache(size_t capacity,
                        IdKind id_kind = IdKind::kSignedInteger)
      : capacity_(capacity), id_kind_(id_kind) {}
  MessageCache(const MessageCache&) = delete;
  MessageCache& operator=(const MessageCache&) = delete;

  AddResult Add(Message message);

  // Removes and returns up to `max` messages, best first, stopping before
  // the one that would take the batch past `max_bytes` (Message::WireBytes)
  // unless the batch is still empty: a batch always has at least one
  // message when the cache has one.
  MessageBatch PopBatch(size_t max, size_t max_bytes = SIZE_MAX);

  // Removes a queued id (e.g. acked while waiting); false if not queued.
  bool RemoveQueued(absl::string_view id);
  // Removes every queued message (e.g. the table's ownership was lost).
  void Clear() {
    queued_.clear();
    order_.clear();
  }

  bool IsQueued(absl::string_view id) const { return queued_.contains(id); }
  size_t queued() const { return queued_.size(); }
  size_t capacity() const { return capacity_; }
  bool full() const { return queued_.size() >= capacity_; }
  bool empty() const { return queued_.empty(); }

 private:
  // priority, time_next, then (integer columns only) canonical integer ids by
  // value before other ids, then the id bytes: total, and unique per id.
  using Key = std::tuple<int64_t, int64_t, bool, absl::int128, std::string>;
  using Order = std::map<Key, Message>;

  Key KeyOf(const Message& m) const;

  const size_t capacity_;
  const IdKind id_kind_;
  Order order_;
  absl::flat_hash_map<std::string, Order::iterator> queued_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_CACHE_H_
