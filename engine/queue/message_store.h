// MessageStore: the SQL a message manager needs, behind a seam, so that the
// manager's logic is unit-tested against an in-memory fake.
//
// Reads are one statement per call unless the id list must be split to stay
// under max_allowed_packet. Times are Unix epoch nanoseconds.
//
// "Due" and "now" in the reads below (PollDue, PollDueIds, PollDueByKey,
// ReadInFlight, FetchDue, NextDueAfter) are MySQL's clock when the statement
// runs: MysqlMessageStore compares time_next with the server's NOW(6) in
// the statement, never with a value msgqd computed, so a row is read due
// only once MySQL's clock has reached its time_next. Their `now` argument
// is the caller's estimate of that clock (DbClock), which a store with no
// clock of its own (the fake) uses instead (docs/design/due-clock.md).
// Writes take `now` as the value to write (time_acked, a postpone's base).
//
// Implementations
// are used by one thread at a time (the table's manager thread) and need not
// be thread-safe. Errors: UNAVAILABLE when MySQL is unreachable (retry
// later), ABORTED for a deadlock or lock wait timeout (retry), others as
// MysqlConnection maps them (permanent).
#ifndef MSGQ_ENGINE_QUEUE_MESSAGE_STORE_H_
#define MSGQ_ENGINE_QUEUE_MESSAGE_STORE_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/queue/binlog_position.h"
#include "engine/queue/fair_key.h"
#include "engine/queue/message.h"

namespace msgq {

// Send bookkeeping for one message: set time_next and bump epoch.
struct Postponement {
  std::string id;
  int64_t time_next = 0;
};

// One delivery handed back (MessageNack, or msgq's own when a message it
// read must die: too many sends, too old, too large).
struct Nack {
  std::string id;
  // The epoch it was streamed with: only a row whose epoch is still
  // epoch + 1 is changed (nobody was sent it since). msgq's own deaths of a
  // polled row with epoch E use E - 1.
  int64_t epoch = 0;
  // Retry at this time (Unix ns); nullopt: dead now.
  std::optional<int64_t> time_next;
};

// One MessageNack request (or one batch of msgq's own deaths).
struct NackGroup {
  std::vector<Nack> nacks;
  // Stored in last_error when the table has that column (truncated to it).
  std::string reason;
};

// What a NackGroup did: rows that will be sent again, rows that died. A
// retried row dies instead when the table's msgq_max_attempts (epoch >= N)
// or msgq_max_age (time_created older) says so.
struct NackCount {
  int64_t retried = 0;
  int64_t dead = 0;
};

// One MessageExtend request: every delivery's row gets time_next.
struct ExtendGroup {
  std::vector<std::pair<std::string, int64_t>> deliveries;  // id, epoch
  int64_t time_next = 0;
};

// One Redrive request: dead rows become due at `now` with epoch 0.
struct RedriveGroup {
  std::vector<std::string> ids;
  bool all = false;  // every dead row (ids ignored)
};

// What Write applied. Each group's outcome: its count, or why the group was
// not applied (nothing of it was): a permanent error of its own (e.g.
// INVALID_ARGUMENT for an id the column cannot hold or whose statement cannot
// fit in max_allowed_packet, INTERNAL for a statement the server refused).
// `postpones` is OK, or the permanent error for which none of the postpones
// was applied. A failing group never keeps the others from committing.
//
// `locked`: ids whose rows another transaction held locked (an
// application's SELECT ... FOR UPDATE, a long transaction's UPDATE), each
// once. Their postpones and acks were left out and the rest applied: an ack
// group's count is of its other ids. A nack, extend or redrive group that
// names one was left out whole, ABORTED. The caller writes them again later.
struct WriteResult {
  std::vector<absl::StatusOr<int64_t>> acks;  // rows unacked -> acked
  std::vector<absl::StatusOr<NackCount>> nacks;
  std::vector<absl::StatusOr<int64_t>> extends;   // rows extended
  std::vector<absl::StatusOr<int64_t>> redrives;  // rows dead -> due
  absl::Status postpones;
  std::vector<std::string> locked;
  // The GTID ("domain-server-sequence") the write's transaction committed
  // as, by which its own events are known in the binlog; "" when nothing
  // was written or the server does not say (MySQL, no binary log).
  std::string gtid;
  // Whether the server names each commit's GTID on this connection: then
  // a gtid of "" means that nothing was written.
  bool gtid_known = false;
};

// A dead row, as ListDead reads it.
struct DeadRow {
  std::string id;
  int64_t epoch = 0;
  std::string last_error;    // "" without a last_error column
  int64_t time_dead = 0;     // 0 without a time_dead column
  int64_t time_created = 0;  // 0 without a time_created column
};

// What one partition purge step did (tables RANGE-partitioned on
// time_created; engine/sql/partition_maintenance.h).
struct PartitionReport {
  int created = 0;                   // partitions added ahead of time
  std::vector<std::string> dropped;  // partitions dropped, oldest first
  // Partitions old enough to drop that still hold an unacked row (or a dead
  // one not past msgq_dead_retention): name, and the id of one such row.
  std::vector<std::pair<std::string, std::string>> held_back;
  // Why creating partitions failed (OK when it did not); drops still ran.
  absl::Status create_error;
};

// msgq_concurrency_by: how many more due rows of each key a poll may read
// (the limit less the key's messages in flight). Keys not in `used` have
// none in flight; NULL keys are not limited (they get `unlimited`).
struct KeyRoom {
  int64_t limit = 0;  // msgq_concurrency
  // FairKeyTag(key) -> messages of the key in flight (> 0 only).
  absl::flat_hash_map<std::string, int64_t> used;
  int64_t unlimited = 0;  // what a NULL key may read (the poll's limit)

  int64_t For(const std::optional<std::string>& key) const {
    if (!key.has_value()) return unlimited;
    const auto it = used.find(FairKeyTag(key));
    return it == used.end() ? limit : std::max<int64_t>(0, limit - it->second);
  }
};

// A row in flight as MySQL shows it: unacked, sent (epoch > 0) and due
// again only at time_next, in the future (ReadInFlight).
struct InFlightRow {
  std::optional<std::string> key;  // the msgq_concurrency_by value
  std::string id;
  int64_t epoch = 0;  // the row's: the delivery's epoch + 1
  int64_t time_next = 0;
};

struct WriteBatch {
  int64_t now = 0;
  // Postponed in one statement per distinct time_next (usually one), split
  // when longer than max_allowed_packet allows.
  std::vector<Postponement> postpones;
  // Each group (one MessageAck request) is acked by its own statement(s),
  // so the count of rows it changed is reported per group.
  std::vector<std::vector<std::string>> ack_groups;
  // Then, in this order, each group by its own statement(s) and reported on
  // its own: nacks, extends, redrives.
  std::vector<NackGroup> nack_groups;
  std::vector<ExtendGroup> extend_groups;
  std::vector<RedriveGroup> redrive_groups;
  // Some of these rows were locked by another transaction at an earlier
  // Write (WriteResult::locked): look for locked rows before writing rather
  // than wait for them.
  bool expect_locked = false;
};

class MessageStore {
 public:
  virtual ~MessageStore() = default;

  // Unacked rows with time_next <= now, ordered by priority, time_next, id;
  // at most `limit` (an implementation may read fewer: MysqlMessageStore
  // clamps it to [0, kMaxPollRows]).
  virtual absl::StatusOr<std::vector<Message>> PollDue(int64_t now,
                                                       int64_t limit) = 0;

  // The ids of PollDue(now, limit)'s rows, in its order, without reading
  // the rows (an index-only scan where the poll index covers it). With
  // FetchDue of the ids not already held, a poll need not read again the
  // rows it has queued or in flight. Only where polls_ids() is true;
  // UNIMPLEMENTED elsewhere.
  virtual bool polls_ids() const { return false; }
  virtual absl::StatusOr<std::vector<std::string>> PollDueIds(int64_t now,
                                                              int64_t limit) {
    (void)now;
    (void)limit;
    return absl::UnimplementedError("polling ids");
  }

  // msgq_concurrency_by tables: PollDue that reads at most room.For(key)
  // due rows of each key (and `limit` in all), best first within a key.
  // UNIMPLEMENTED by stores without it.
  virtual absl::StatusOr<std::vector<Message>> PollDueByKey(
      int64_t now, int64_t limit, const KeyRoom& room) {
    (void)now;
    (void)limit;
    (void)room;
    return absl::UnimplementedError("polling by key");
  }
  // msgq_concurrency_by tables: the rows with a non-NULL key in flight at
  // `now` (unacked, epoch > 0, time_next > now). A row nacked with a delay
  // looks the same and is counted too. UNIMPLEMENTED by stores without it.
  virtual absl::StatusOr<std::vector<InFlightRow>> ReadInFlight(int64_t now) {
    (void)now;
    return absl::UnimplementedError("reading rows in flight");
  }
  // The rows among `ids` that are unacked with time_next <= now (a primary
  // key lookup, used when the binlog names new or changed rows, and for the
  // new ids of PollDueIds).
  virtual absl::StatusOr<std::vector<Message>> FetchDue(
      const std::vector<std::string>& ids, int64_t now) = 0;

  // Where in the binlog the rows of the last PollDue, PollDueByKey or
  // FetchDue that returned OK are from: the position of the consistent
  // snapshot they were read in (binlog_position.h). Unknown after any
  // other call, when the server has no binary log or does not say where a
  // snapshot is (MySQL), and for stores that do not read in snapshots.
  virtual BinlogPosition read_position() const { return {}; }

  // The earliest time_next > now among unacked rows; nullopt when none.
  virtual absl::StatusOr<std::optional<int64_t>> NextDueAfter(int64_t now) = 0;

  // Postpones (time_next = given, epoch = epoch + 1) and acks (time_acked =
  // now, time_next = NULL) only rows still unacked and not dead, then nacks,
  // extends and redrives (see their structs), in one transaction. Nacks and
  // extends change only rows unacked, not dead and with the delivery's
  // epoch + 1; a dying row gets time_next = NULL, time_dead = now (if the
  // column exists) and last_error = reason (if the column exists). The
  // postpones (as a whole) and each group are the units of failure: a
  // unit that fails permanently is left out and reported in WriteResult,
  // and the other units commit together. Postponed ids that the id column
  // cannot hold are skipped (never written into SQL) and logged. A row
  // another transaction keeps locked does not hold the others back: what
  // names it is left out (WriteResult::locked). Non-OK only for UNAVAILABLE
  // (connection lost) or ABORTED (deadlock, lock wait timeout that could
  // not be worked around); then nothing at all was applied.
  virtual absl::StatusOr<WriteResult> Write(const WriteBatch& batch) = 0;

  // Deletes at most `limit` rows acked before `cutoff` (now -
  // vt_purge_after), keeping, with msgq_dedup_window, those whose dedup_key
  // is still in its window at that now (docs/design/dedup.md; PurgeDead
  // too, its now being cutoff + msgq_dead_retention); returns how many.
  virtual absl::StatusOr<int64_t> Purge(int64_t cutoff, int limit) = 0;

  // Dead rows are those with time_acked and time_next both NULL.
  // Deletes at most `limit` rows dead since before `cutoff` (needs the
  // time_dead column; FAILED_PRECONDITION without it); returns how many.
  virtual absl::StatusOr<int64_t> PurgeDead(int64_t cutoff, int limit) = 0;
  // Tables RANGE-partitioned on time_created only (MessageTable::
  // purge_by_partition): instead of Purge, creates partitions ahead and
  // drops old ones whose rows are all acked before now - vt_purge_after (or
  // dead past msgq_dead_retention). UNIMPLEMENTED by stores without it.
  virtual absl::StatusOr<PartitionReport> MaintainPartitions(int64_t now) {
    (void)now;
    return absl::UnimplementedError("partition purge");
  }
  // How many rows are dead (an index range count on poller_idx).
  virtual absl::StatusOr<int64_t> CountDead() = 0;
  // At most `limit` dead rows with id > after_id (all when after_id is
  // empty), ordered by id. INVALID_ARGUMENT for an after_id the id column
  // cannot hold.
  virtual absl::StatusOr<std::vector<DeadRow>> ListDead(
      const std::string& after_id, int limit) = 0;

  // The manager's round is over: give back whatever connection the round
  // borrowed, so an idle table holds none.
  virtual void EndRound() {}
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MESSAGE_STORE_H_
