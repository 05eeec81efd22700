// MessageCache: the in-memory queue of one message table.
//
// Holds up to `capacity` queued messages, and up to `max_bytes` of their
// rows (Message::WireBytes; a message larger than that is still taken when
// the cache is empty), ordered by priority ascending, then time_next
// ascending, then id (oldest first, so nothing starves). An id is queued at
// most once. Which ids are in flight (sent or being acked, not
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
// Fair tables (msgq_fair_by) order within a priority by a start-time fair
// queuing tag before time_next: a message of key k added at priority p gets
// tag = max(V[p], last_tag[p][k]) + 1, where V[p] is the tag of the last
// message popped at p. So each key's messages take rounds 1, 2, 3, ... and
// a key that was idle joins the current round: a tenant with a backlog of a
// million and one with a single message alternate. The per-key state lives
// only while the key has queued messages (a key whose last message is
// removed unsent starts afresh at the current round); a priority's state
// only while it has queued messages. Other tables keep the plain order
// (their tag is always 0).
//
// Not thread-safe: the owning MessageManager guards it with its mutex. Not
// copyable (it indexes its own map by iterator).
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_CACHE_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
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
    kFull,            // capacity or max_bytes reached: not added
  };

  // `id_kind` is the table's (MessageTable::id_kind). The default keeps the
  // old order for callers not yet passing it: canonical integers by value,
  // other ids bytewise after them.
  // `fair` (msgq_fair_by) orders within a priority by the fair tag first
  // (see above).
  explicit MessageCache(size_t capacity,
                        IdKind id_kind = IdKind::kSignedInteger,
                        bool fair = false, size_t max_bytes = SIZE_MAX)
      : capacity_(capacity),
        max_bytes_(max_bytes),
        id_kind_(id_kind),
        fair_(fair) {}
  MessageCache(const MessageCache&) = delete;
  MessageCache& operator=(const MessageCache&) = delete;

  AddResult Add(Message message);

  // Removes and returns up to `max` messages, best first, stopping before
  // the one that would take the batch past `max_bytes` (Message::WireBytes)
  // unless the batch is still empty: a batch always has at least one
  // message when the cache has one.
  MessageBatch PopBatch(size_t max, size_t max_bytes = SIZE_MAX);
  // PopBatch of the messages `admit` takes (msgq_concurrency_by): each
  // message that fits is offered in order and left queued when `admit`
  // returns false; a batch may be empty although the cache is not.
  MessageBatch PopAdmitted(size_t max, size_t max_bytes,
                           const std::function<bool(const Message&)>& admit);
  // Whether `can_send` holds for some queued message (read-only).
  bool Any(const std::function<bool(const Message&)>& can_send) const;

  // Removes a queued id (e.g. acked while waiting); false if not queued.
  bool RemoveQueued(absl::string_view id);
  // Removes every queued message (e.g. the table's ownership was lost).
  void Clear() {
    queued_.clear();
    order_.clear();
    rounds_.clear();
    bytes_ = 0;
  }

  bool IsQueued(absl::string_view id) const { return queued_.contains(id); }
  size_t queued() const { return queued_.size(); }
  size_t capacity() const { return capacity_; }
  // Bytes of the queued rows (Message::WireBytes), and their bound.
  size_t bytes() const { return bytes_; }
  size_t max_bytes() const { return max_bytes_; }
  bool full() const {
    return queued_.size() >= capacity_ || bytes_ >= max_bytes_;
  }
  bool empty() const { return queued_.empty(); }
  // Fair keys with queued messages (0 unless fair).
  size_t fair_keys() const;

 private:
  // priority, the fair tag (0 unless fair), time_next, then (integer
  // columns only) canonical integer ids by value before other ids, then the
  // id bytes: total, and unique per id.
  using Key =
      std::tuple<int64_t, int64_t, int64_t, bool, absl::int128, std::string>;
  using Order = std::map<Key, Message>;

  // The fair state of one priority.
  struct KeyRound {
    int64_t last_tag = 0;  // of the key's latest added message
    size_t queued = 0;     // its messages queued
  };
  struct Rounds {
    int64_t virtual_tag = 0;  // V: the tag of the last message popped
    size_t queued = 0;        // messages queued at this priority
    absl::flat_hash_map<std::string, KeyRound> keys;
  };

  Key KeyOf(const Message& m, int64_t tag) const;
  // Fair tables: the tag of a message about to be added (and its key's
  // state updated), and the bookkeeping of one leaving (popped or not).
  int64_t TagForAdd(const Message& m);
  void Leave(const Key& key, const Message& m, bool popped);

  // Removes `it` from order_ and queued_ (fair bookkeeping included);
  // returns the message and the next position.
  Order::iterator Erase(Order::iterator it, bool popped, Message* out);

  const size_t capacity_;
  const size_t max_bytes_;
  const IdKind id_kind_;
  const bool fair_;
  Order order_;
  absl::flat_hash_map<std::string, Order::iterator> queued_;
  size_t bytes_ = 0;  // WireBytes of order_'s messages
  absl::flat_hash_map<int64_t, Rounds> rounds_;  // by priority; fair only
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_CACHE_H_
