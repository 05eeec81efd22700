// BinlogExpectations: what the binlog last said of a row, so that a read
// MySQL answered from before that commit was visible is not queued.
//
// The binlog can run a little ahead of InnoDB: a dump thread sends a
// transaction's events before its commit is visible to other sessions, and
// a poll that started before the commit answers with the older row. Without
// a check, a row updated by SQL and read back at that moment is queued as it
// was: sent at its old priority, sent early when the update moved it later,
// or sent again after an application's UPDATE acked it. So, per row the
// binlog showed changing (and msgq did not write), the manager remembers:
//   a row      its priority and time_next in the after image: a read that
//              shows another priority or time_next is stale;
//   gone       acked, dead or deleted: any read of it as due is stale.
// A read that matches a row expectation fulfils it (forgotten); a gone
// expectation stays until it ages out. A later change replaces what an
// earlier one said (binlog order is commit order, and the visible row
// catches up with the last change).
//
// Bounds: at most `capacity` ids, none older than `max_age` ns (by the times
// given to the calls); the oldest go first. Forgetting early only loses the
// check (the read is queued as before), never a message; a wrong
// expectation at worst holds a row back until it ages out.
//
// Not thread-safe: the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_BINLOG_EXPECTATIONS_H_
#define MSGQ_ENGINE_QUEUE_BINLOG_EXPECTATIONS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace msgq {

class BinlogExpectations {
 public:
  BinlogExpectations(size_t capacity, int64_t max_age)
      : capacity_(capacity), max_age_(max_age) {}

  // The binlog showed `id` unacked with `priority` and `time_next` at `now`.
  void ExpectRow(absl::string_view id, int64_t priority, int64_t time_next,
                 int64_t now);
  // The binlog showed `id` acked, dead or deleted at `now`.
  void ExpectGone(absl::string_view id, int64_t now);
  // Forgets `id` (msgq itself decides its state: it is in flight).
  void Forget(absl::string_view id);

  // Whether a read showing `id` due with `priority` and `time_next` may be
  // queued: yes when nothing (or nothing younger than max_age) is expected
  // of it, or the read shows the expected row (which fulfils it).
  bool Accept(absl::string_view id, int64_t priority, int64_t time_next,
              int64_t now);

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    bool gone = false;
    int64_t priority = 0;
    int64_t time_next = 0;
    int64_t at = 0;    // when the binlog said it
    uint64_t seq = 0;  // matches its order_ entry while that one is live
  };
  void Put(absl::string_view id, Entry entry);
  // Drops entries older than `now - max_age_`, stale order_ entries, and
  // compacts order_ when most of it is stale.
  void Age(int64_t now);

  const size_t capacity_;
  const int64_t max_age_;
  uint64_t next_seq_ = 0;
  absl::flat_hash_map<std::string, Entry> entries_;
  std::deque<std::pair<uint64_t, std::string>> order_;  // oldest first
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_BINLOG_EXPECTATIONS_H_
