// MessageCounts: one message table's rows by state, kept exact from the
// binlog's row changes after one counting read, so that nothing scans the
// table to report its depth.
//
// A row is, as MySQL holds it: acked (time_acked set; not counted), dead
// (time_acked and time_next NULL), or unacked with a time_next: *ready*
// once the clock reaches its time_next, else *in flight* when it was sent
// at least once (epoch > 0: it waits for its ack, or for the retry a nack
// or an extend set) or *scheduled* when never sent. The counts are two
// multisets of the unacked rows' time_next values, sent and never sent
// (one entry per distinct value, with its number of rows), and the number
// of dead rows. Each binlog change moves one row from the state its
// before image shows to the state its after image shows (insert: from
// nothing; delete: to nothing), so no per-row memory is kept.
//
// Example:
//   MessageCounts counts;
//   const uint64_t token = counts.BeginRead();
//   ... read the unacked rows grouped by (epoch > 0, time_next) and the
//   ... binlog position of that read's snapshot ...
//   absl::Status s = counts.Install(token, snapshot, position);
//   counts.Apply(changes);                              // from the binlog
//   std::optional<MessageCounts::Counts> now = counts.Get(now_ns);
//
// The counting read races the changes it reads. When the read names the
// binlog position its snapshot is consistent with (a GTID position, one
// sequence number per replication domain), Install() takes it and applies
// again the changes received since BeginRead() whose GTID comes after that
// position (at most Options::max_journal of them are kept; past it, or
// for a change without a GTID, it falls back to the rule below). Without
// a position it takes the snapshot only if no change was applied since
// BeginRead(), and answers ABORTED otherwise (the caller reads again
// later); a change committed before such a read but seen after the
// install is counted twice until the next read. The caller reads again
// periodically (a reconcile) and counts the reads that disagreed
// (corrections()). A change whose before image lacks
// time_next, time_acked or epoch (binlog_row_image=MINIMAL), or that would
// take a state below zero, marks the counts stale: they are still
// reported, and stale() tells the caller to read again at once.
//
// Bound: at most Options::max_times distinct time_next values are kept per
// multiset; past it a new value joins the nearest kept value above it (or,
// when none is above, the largest): the totals stay exact, a row may turn
// ready later (or sooner) than its time_next by up to the gap between the
// two values.
//
// Thread-safe: one mutex guards everything; no method blocks beyond it.
// Design: docs/design/exact-counts.md.
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_COUNTS_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_COUNTS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "engine/queue/row_change.h"

namespace msgq {

class MessageCounts {
 public:
  struct Options {
    // Distinct time_next values kept at most (see the header comment).
    size_t max_times = 1000000;
    // Changes kept while a counting read runs (see Install).
    size_t max_journal = 100000;
  };
  // A binlog position by GTID: replication domain -> last sequence number
  // included ("0-1-100,1-2-7" parsed by ParseGtidPosition).
  using GtidPosition = std::map<uint32_t, uint64_t>;
  // INVALID_ARGUMENT when `text` is not a comma-separated list of
  // domain-server-sequence.
  static absl::StatusOr<GtidPosition> ParseGtidPosition(absl::string_view text);
  // What a counting read found: the unacked rows by time_next (dead rows
  // excluded), never sent and sent, and the dead rows. Rows due at the
  // read may all be given as never sent (both count as ready): a change
  // that takes one out finds it in either multiset.
  struct Snapshot {
    std::map<int64_t, int64_t> unsent_by_time_next;
    std::map<int64_t, int64_t> sent_by_time_next;
    int64_t dead = 0;
  };
  // The counts at a moment.
  struct Counts {
    int64_t ready = 0;      // unacked, time_next <= now
    int64_t scheduled = 0;  // unacked, epoch 0, time_next > now
    int64_t in_flight = 0;  // unacked, epoch > 0, time_next > now
    int64_t dead = 0;
    // The smallest time_next > 0 among the ready rows (Unix ns); nullopt
    // when none (rows with time_next 0, the column default, carry no due
    // time).
    std::optional<int64_t> oldest_due_ns;
    int64_t now_ns = 0;       // the moment asked for
    int64_t corrections = 0;  // see corrections()
  };

  MessageCounts() : MessageCounts(Options()) {}
  explicit MessageCounts(Options options) : options_(options) {}
  MessageCounts(const MessageCounts&) = delete;
  MessageCounts& operator=(const MessageCounts&) = delete;

  // Applies committed changes in binlog order.
  void Apply(const std::vector<RowChange>& changes) ABSL_LOCKS_EXCLUDED(mu_);
  // A counting read is about to start; pass the token to Install.
  uint64_t BeginRead() ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the counts with `snapshot`. ABORTED (nothing changed) when a
  // change was applied since BeginRead() returned `token`. OK otherwise;
  // clears stale(), and counts a correction when loaded before and the
  // snapshot differs from what was kept.
  // `position`: the binlog position the snapshot is consistent with, when
  // known (see the header comment).
  absl::Status Install(uint64_t token, Snapshot snapshot,
                       const std::optional<GtidPosition>& position =
                           std::nullopt) ABSL_LOCKS_EXCLUDED(mu_);
  // The read BeginRead() announced failed: stop keeping changes for it.
  void AbandonRead() ABSL_LOCKS_EXCLUDED(mu_);
  // Changes may have been missed (the binlog stream restarted, the table
  // was reset): read again at once.
  void MarkStale() ABSL_LOCKS_EXCLUDED(mu_);

  // The counts at `now_ns` (MySQL's clock, Unix ns); nullopt before the
  // first Install.
  std::optional<Counts> Get(int64_t now_ns) ABSL_LOCKS_EXCLUDED(mu_);
  bool loaded() const ABSL_LOCKS_EXCLUDED(mu_);
  bool stale() const ABSL_LOCKS_EXCLUDED(mu_);
  // Installs that found the kept counts wrong.
  int64_t corrections() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A multiset of time_next values, with the rows at or before a boundary
  // that only moves forward (or restarts when the clock steps back).
  class Times {
   public:
    // Adds `delta` rows at `time_next`; false (nothing changed) when that
    // would take a count below zero.
    bool Add(int64_t time_next, int64_t delta, size_t max_times);
    // Rows with time_next <= now_ns, and all rows.
    int64_t Due(int64_t now_ns);
    int64_t total() const { return total_; }
    // The smallest time_next > 0 at or before now_ns.
    std::optional<int64_t> OldestDue(int64_t now_ns) const;
    bool operator==(const std::map<int64_t, int64_t>& other) const {
      return times_ == other;
    }
    void Clear() { *this = Times(); }
    const std::map<int64_t, int64_t>& map() const { return times_; }

   private:
    int64_t Key(int64_t time_next, size_t max_times) const;
    std::map<int64_t, int64_t> times_;
    int64_t total_ = 0;
    int64_t due_ = 0;  // the rows with key <= boundary_
    int64_t boundary_ = std::numeric_limits<int64_t>::min();
  };

  // Whether `c` is at or before installed_at_ (counted by the snapshot).
  bool CountedLocked(const RowChange& c) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves a change's row from its before state to its after state.
  void ApplyLocked(const RowChange& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves one row into (delta +1) or out of (-1) a state.
  void MoveLocked(std::optional<int64_t> time_next, bool sent, int64_t delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  Times unsent_ ABSL_GUARDED_BY(mu_);
  Times sent_ ABSL_GUARDED_BY(mu_);
  int64_t dead_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;  // changes applied so far
  // The changes applied since the last BeginRead() (their state only),
  // while a read runs and while it fits.
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<RowChange> journal_ ABSL_GUARDED_BY(mu_);
  bool journal_full_ ABSL_GUARDED_BY(mu_) = false;
  // The position the last install was consistent with: changes up to it
  // that the binlog delivers after the install are already counted.
  std::optional<GtidPosition> installed_at_ ABSL_GUARDED_BY(mu_);
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  int64_t corrections_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_COUNTS_H_
