// RecentIds: a bounded, aging set of message ids, each with one int64 value
// (a time), for facts that matter only briefly: the ids msgq itself is
// acking, until the binlog shows those acks (so an ack the binlog shows
// that msgq did not write is known to be an application's UPDATE), and
// when the binlog showed a row's commit, until the row is read and sent.
//
// Bounds: at most `capacity` ids, none older than `max_age` (by the time
// given to Put, in the caller's unit); the oldest go first when either
// bound is passed. Forgetting early is the only failure mode, and callers
// treat a missing id as "not known", never as an error.
//
// Not thread-safe: the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_RECENT_IDS_H_
#define MSGQ_ENGINE_QUEUE_RECENT_IDS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace msgq {

class RecentIds {
 public:
  RecentIds(size_t capacity, int64_t max_age)
      : capacity_(capacity), max_age_(max_age) {}

  // Remembers `id` with `value` (its time). An id already known keeps its
  // first value (and its place in the age order). Drops ids older than
  // `value - max_age`, then the oldest while over capacity.
  void Put(absl::string_view id, int64_t value);
  // The value of `id`, forgotten by the call; nullopt if unknown.
  std::optional<int64_t> Take(absl::string_view id);
  // Forgets `id` (no-op if unknown).
  void Erase(absl::string_view id) { (void)Take(id); }
  bool Contains(absl::string_view id) const { return values_.contains(id); }
  // The largest value among ids forgotten for capacity while still younger
  // than max_age (INT64_MIN if none): facts newer than this may have been
  // forgotten early.
  int64_t evicted_young() const { return evicted_young_; }

  size_t size() const { return values_.size(); }

 private:
  struct Entry {
    int64_t value = 0;
    uint64_t seq = 0;  // matches its order_ entry while that one is live
  };
  // Drops stale order_ entries at the front and compacts when most are
  // stale, so order_ stays within a small factor of values_.
  void Trim();

  const size_t capacity_;
  const int64_t max_age_;
  uint64_t next_seq_ = 0;
  int64_t evicted_young_ = std::numeric_limits<int64_t>::min();
  absl::flat_hash_map<std::string, Entry> values_;
  std::deque<std::pair<uint64_t, std::string>> order_;  // oldest first
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_RECENT_IDS_H_
