// RoundScheduler: when a message manager's next round of MySQL work is due,
// and what it reads: a poll, a fetch of binlog-named rows by id, a purge
// step; and when to retry after MySQL failed.
//
// Rules:
// - Poll when a subscriber asked for one (first subscriber, binlog restart,
//   MySQL back), every poll interval, when the earliest known time_next is
//   reached, and when a backlog was seen (a poll hit its limit, the cache
//   refused rows) and the cache drained to half. Never without subscribers
//   or with a full cache.
// - Fetch the rows the binlog named, in the next round; a row not visible
//   yet is read again after refetch_delay, doubling, max_refetches times,
//   then one poll is requested. A poll does not drop named ids: those it did
//   not return are fetched next round, so no named row waits for the poll
//   interval (at most the refetch schedule plus one round).
// - Only an owner reads: without ownership of the table (several msgqd
//   instances, see engine/lease/) no poll, fetch or purge is due; writes
//   (postpones of earlier sends, acks, nacks) still are.
// - Writes a row lock held back (WriteResult::locked) run at their retry
//   time, View::locked_retry_at, owner or not, like the other writes.
// - A backlog noted while a poll runs survives that poll's result.
// - Purge every poll interval, and at once again after a full purge batch.
// - After a MySQL failure nothing runs until retry_at; the delay doubles
//   per failed round from retry_min to retry_max, with +-retry_jitter
//   (common/backoff.h).
//
// Intervals and deadlines run on a monotonic clock (`mono`, never stepped);
// message due times (time_next) are Unix nanoseconds compared with the wall
// clock (`wall_ns`, the estimate of MySQL's clock), and converted to a
// monotonic deadline as a delay.
//
// A due time the estimate reached polls only once a reading of MySQL's
// clock confirms it (View::reading_ns, reading_sent): one at or after it,
// from a query sent at or after the monotonic time the due time was noted
// (again), so that neither an estimate ahead of MySQL's clock nor a
// reading from before a step back of it makes a poll that finds nothing
// and notes the same due time again, round after round. Until then no
// deadline is taken from it; NeedsReading() says the manager should ask
// for a reading, whose arrival wakes it (db_readings.h,
// docs/design/due-clock.md). The poll itself judges due by MySQL's clock.
//
// Pure: it never reads a clock; callers pass both times. Not thread-safe:
// the owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_ROUND_SCHEDULER_H_
#define MSGQ_ENGINE_QUEUE_ROUND_SCHEDULER_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "common/backoff.h"

namespace msgq {

class RoundScheduler {
 public:
  struct Options {
    absl::Duration poll_interval = absl::Seconds(30);
    absl::Duration refetch_delay = absl::Milliseconds(5);
    int max_refetches = 5;
    absl::Duration retry_min = absl::Milliseconds(100);
    absl::Duration retry_max = absl::Seconds(10);
    // Relative jitter of the retry delay (so many tables do not all retry
    // at once after an outage), and the seed of its generator.
    double retry_jitter = 0.2;
    uint64_t seed = 0;
    // Binlog-named ids waiting for a fetch; more are left to a poll.
    size_t max_fetch_ids = 10000;
  };

  // What the manager's other parts look like when a decision is made.
  struct View {
    bool subscribers = false;
    bool cache_full = false;
    bool writes_pending = false;  // postpones due or requests waiting
    // Owed postpones whose grace runs out then (monotonic); InfiniteFuture:
    // none owed.
    absl::Time postpones_due_at = absl::InfiniteFuture();
    // Writes a row lock held back are retried then (monotonic);
    // InfiniteFuture: none.
    absl::Time locked_retry_at = absl::InfiniteFuture();
    bool owner = true;  // this instance may read and send the table
    // The latest reading of MySQL's clock (DbReadings::Last): it read
    // reading_ns after the monotonic reading_sent. The defaults confirm
    // every due time (a caller whose wall clock is MySQL's own).
    int64_t reading_ns = INT64_MAX;
    absl::Time reading_sent = absl::InfiniteFuture();
  };

  // The reads of one round, taken by Take().
  struct Round {
    bool poll = false;
    uint64_t backlog_generation = 0;  // hand back to PollDone
    std::vector<std::string> fetch_ids;
    bool purge = false;
    bool pump = false;  // WakeAt's time came: hand out queued messages
  };

  RoundScheduler(Options options, absl::Time mono_now);

  // ---- Events ----
  void RequestPoll() { poll_requested_ = true; }
  // A committed row is due at `time_next_ns` (Unix ns), as known at the
  // monotonic `mono` (a reading confirms it only if taken after that; the
  // default: any reading).
  void NoteDueAt(int64_t time_next_ns, absl::Time mono = absl::InfinitePast());
  // More due rows exist than the cache holds: poll again once it drained.
  void NoteBacklog();
  // The cache holds `queued` of `capacity`: requests the refill poll when a
  // backlog is pending and the cache drained to half.
  void CacheLevel(size_t queued, size_t capacity);
  // The binlog names a due row: read it by id in the next round. Returns
  // false (and notes a backlog) when too many are waiting already.
  bool NameForFetch(const std::string& id);
  // The row no longer needs reading (acked, deleted, rescheduled).
  void ForgetFetch(const std::string& id);

  // Queued messages may be sent at `mono` (a rate limit's next token): a
  // round with `pump` runs then. The earliest of several calls wins.
  void WakeAt(absl::Time mono) { pump_at_ = std::min(pump_at_, mono); }

  // ---- Decisions ----
  // True when a round should run now.
  bool HaveWork(const View& view, absl::Time mono, int64_t wall_ns) const;
  // When HaveWork may next become true without an event (monotonic).
  absl::Time NextDeadline(const View& view, absl::Time mono,
                          int64_t wall_ns) const;
  // Takes the reads that are due now (at most one of poll and fetch; the
  // poll wins) and advances the interval timers.
  Round Take(const View& view, absl::Time mono, int64_t wall_ns);
  // Whether MySQL work is on hold after a failure.
  bool Waiting(absl::Time mono) const { return !mysql_ok_ && mono < retry_at_; }
  // Whether a due time the estimate reached waits for a reading of MySQL's
  // clock to confirm it (a poll would read it otherwise).
  bool NeedsReading(const View& view, int64_t wall_ns) const;

  // ---- Outcomes ----
  // A poll finished: `hit_limit` when it returned as many rows as asked;
  // `found` are the ids it returned.
  void PollDone(const Round& round, bool hit_limit,
                const absl::flat_hash_set<std::string>& found);
  // A fetch of `asked` returned `found`; the others are read again later.
  void FetchDone(const std::vector<std::string>& asked,
                 const absl::flat_hash_set<std::string>& found,
                 absl::Time mono);
  // A fetch failed for a reason other than MySQL being down.
  void FetchFailed() { poll_requested_ = true; }
  // A purge step deleted a full batch: purge again next round.
  void PurgeDone(bool full_batch) { purge_more_ = full_batch; }
  // MySQL failed: hold off until the backoff passes; a poll follows.
  // Returns true when MySQL was considered up until now.
  bool MysqlFailed(absl::Time mono);
  // MySQL answered. Returns true when it was considered down until now.
  bool MysqlOk();

  bool mysql_ok() const { return mysql_ok_; }
  std::optional<int64_t> next_due_ns() const { return next_due_ns_; }
  bool backlog() const { return more_due_; }
  size_t fetch_waiting() const { return fetch_ids_.size() + refetch_.size(); }

 private:
  bool PollDue(const View& view, absl::Time mono, int64_t wall_ns) const;
  // Whether a reading confirms next_due_ns_ (see above).
  bool DueConfirmed(const View& view) const {
    return next_due_ns_.has_value() && view.reading_ns >= *next_due_ns_ &&
           view.reading_sent >= due_known_at_;
  }
  bool MayPoll(const View& view) const {
    return view.owner && view.subscribers && !view.cache_full;
  }
  bool FetchDue(const View& view, absl::Time mono) const;
  bool PurgeDue(const View& view, absl::Time mono) const {
    return view.owner && (purge_more_ || mono >= next_purge_at_);
  }

  const Options options_;
  bool poll_requested_ = false;
  absl::Time next_poll_at_;
  absl::Time next_purge_at_;
  bool purge_more_ = false;
  std::optional<int64_t> next_due_ns_;
  // When next_due_ns_ was last noted (monotonic).
  absl::Time due_known_at_ = absl::InfinitePast();
  bool more_due_ = false;
  uint64_t backlog_generation_ = 0;
  absl::flat_hash_set<std::string> fetch_ids_;
  // Named rows a fetch did not find: id -> reads so far.
  absl::flat_hash_map<std::string, int> refetch_;
  absl::Time refetch_at_ = absl::InfiniteFuture();
  bool mysql_ok_ = true;
  Backoff retry_backoff_;
  absl::Time retry_at_ = absl::InfinitePast();
  absl::Time pump_at_ = absl::InfiniteFuture();
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_ROUND_SCHEDULER_H_
