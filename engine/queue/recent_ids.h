// RecentIds: a bounded set of message ids, each with one int64 value, the
// oldest forgotten first: for facts a caller may lose without harm, such
// as when the binlog showed a row's commit, until the row is queued (a
// latency metric).
//
// Example:
//   RecentIds seen(1 << 16);
//   seen.Put("a", now);
//   seen.Take("a");  // now; nullopt the second time
//
// Bounds: at most `capacity` ids; the one put first goes when a new one
// does not fit. Nothing is kept for a time. Forgetting early is the only
// failure mode, and callers treat a missing id as "not known", never as
// an error.
//
// Not thread-safe: the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_RECENT_IDS_H_
#define MSGQ_ENGINE_QUEUE_RECENT_IDS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace msgq {

class RecentIds {
 public:
  explicit RecentIds(size_t capacity) : capacity_(capacity) {}

  // Remembers `id` with `value`. An id already known keeps its first value
  // (and its place in the order). Drops the oldest while over capacity.
  void Put(absl::string_view id, int64_t value);
  // The value of `id`, forgotten by the call; nullopt if unknown.
  std::optional<int64_t> Take(absl::string_view id);
  // Forgets `id` (no-op if unknown).
  void Erase(absl::string_view id) { (void)Take(id); }
  bool Contains(absl::string_view id) const { return values_.contains(id); }

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
  uint64_t next_seq_ = 0;
  absl::flat_hash_map<std::string, Entry> values_;
  std::deque<std::pair<uint64_t, std::string>> order_;  // oldest first
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_RECENT_IDS_H_
