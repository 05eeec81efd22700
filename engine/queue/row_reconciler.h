// RowReconciler: the race rules of one message table, in one place. It
// answers whether what a read (a poll or a fetch by id), the binlog or a
// stream that ended says of a row may be believed, given what this msgqd
// sent and wrote and what the binlog said before. MessageManager tells it
// each event and acts on its answers; the reconciler touches neither MySQL
// nor the cache.
//
// Why there are races at all: a row changes in three places that see each
// other late. MySQL commits msgq's own writes (postpones, acks, nacks) and
// the applications' (INSERT, UPDATE, DELETE); a read answers with the rows
// as they were when it ran, and its answer arrives later; the binlog shows
// every commit in commit order, sometimes before a read can see it and
// sometimes long after.
//
// What it keeps (each bounded; forgetting a fact early only loses a check
// or a count, never a message):
//   in flight       the SettlementLedger: ids sent or being acked, nacked,
//                   extended or killed, and the postpone owed for each;
//   left reading    ids that left flight while a read ran;
//   expectations    BinlogExpectations: what the binlog last said of rows
//                   msgq did not write (10 s);
//   acks writing    ids msgq is acking, from the write's start until its
//                   result (bounded by the acks running);
//   own echoes      OwnEchoes: the acks and postpones msgq committed, by
//                   the GTID of their transaction, until the binlog has
//                   passed it (bounded by the writes whose echo is due;
//                   matched by id where the server names no GTIDs);
//   own writes      the time_next of msgq's latest committed postpone,
//                   nack or extend of an id, until the binlog echoes it
//                   (60 s from the round that wrote it);
//   shown in flight the time_next the binlog last showed of each id in
//                   flight, until it leaves flight (an echo may come
//                   before the write's result);
//   read fence      with row images: the latest position R of a read
//                   that returned rows (or R0, see rule 6), and the images
//                   that came while a read ran, until the reads end
//                   (bounded by kMaxDeferred);
//   seen            when the binlog showed a due row's commit, until the
//                   row is queued (600 s; the commit_to_send latency).
//
// The rules, which together keep invariant 2 of docs/architecture.md#invariants
// (no stale copy of a row is ever queued):
//  1. In flight is msgq's. An id is in flight from its send, or from an
//     accepted ack, nack, extend or death, until each write msgq owes or
//     runs for it has finished (settlement_ledger.h). A read of an id in
//     flight is never queued (MySQL may still show the row from before the
//     write), and a binlog change of it that leaves it unacked is msgq's
//     own write and is ignored; only the binlog showing it gone counts.
//  2. A read at R drops an id whose settling write committed at W > R.
//     Kept as: an id that leaves flight while a read runs is dropped from
//     it (bounded by the reads running). That drops the W <= R cases too,
//     which changes nothing: only the ack lane settles while the table's
//     round reads, and a row acked at W <= R is not due in the read. W's
//     position is known only once its echo passed, often after the read.
//     A hand-back is not such a write: it wrote nothing.
//  3. The binlog may be ahead of a read. What the binlog last said of a row
//     msgq did not write (its priority and time_next; or acked, dead,
//     deleted) is expected; a read that shows anything else is stale and
//     dropped (a fetch reads it again), a read that shows it fulfils it.
//     msgq's own writes (rule 1, rule 5) clear the expectation. A purged
//     row (deleted when acked) was acked long before: no read can show it.
//  4. A hand-back is queued again from memory only while it is still the
//     send's (within its ack wait: past it MySQL has the row due again and
//     the poll owns it), when no ack or hold of it runs, when no ack of it
//     msgq committed awaits its echo, and when the binlog has not shown it
//     gone or changed since (rule 3).
//  5. Own echoes, by position. A change whose GTID is that of a committed
//     ack or postpone of msgq's (kept from the commit until the binlog
//     passes that transaction) is its echo: a binlog ack of it is not an
//     application's UPDATE (acked_by_sql), and a message handed back and
//     queued again stays queued. An ack shown while msgq's ack of the id
//     is still being written is msgq's too (its echo may come before its
//     result; D4). Where the server names no GTIDs, an id's next ack (or
//     change with the time_next written) after a committed write is its
//     echo.
//  6. Images, by position. A row image at E (where its rows event ends)
//     is queued only when E is after the position R of every read that
//     returned rows (no read could have returned the row, sent it and
//     seen it settled since that commit: the largest R is kept), and
//     after R0, the position of the first read that started after this
//     manager was built or granted the table (a predecessor stopped
//     sending before the grant: its reads are at or before R0). A read's
//     R is known when it ends: an image that comes while a read runs is
//     deferred and decided as the reads end (fetched by id when a read
//     from before E returned the id, or msgq sent, acked, nacked or
//     extended it meanwhile; nothing when a read at or after E returned
//     it). Without a position (a read with rows and none: MySQL, no
//     binary log; another log's file name) images stop until a read
//     started after that one ends with one; rows are fetched by id. A
//     manager with no predecessor uses images until a read returns rows.
//  7. The binlog shows commits in order: until it echoes a write of
//     msgq's that committed (an ack, postpone, nack or extend), every
//     change of that row it shows is older than the write. Such a change
//     is never queued as an image (the row is read by id instead), as
//     msgq's write may have settled what the image shows.
// The exhaustive interleaving test (row_reconciler_interleaving_test.cc)
// checks these answers against a model of MySQL's row, and names the
// cases where they are knowingly not exact (D2, D4, D5).
//
// Pure logic: no I/O, no clock (times are the caller's: `now` is Unix ns
// on the wall clock, `mono` the monotonic clock). Not thread-safe: the
// owning MessageManager guards it with its mutex.
#ifndef MSGQ_ENGINE_QUEUE_ROW_RECONCILER_H_
#define MSGQ_ENGINE_QUEUE_ROW_RECONCILER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/queue/binlog_expectations.h"
#include "engine/queue/message.h"
#include "engine/queue/message_store.h"
#include "engine/queue/own_echoes.h"
#include "engine/queue/recent_ids.h"
#include "engine/queue/row_change.h"
#include "engine/queue/settlement_ledger.h"

namespace msgq {

class RowReconciler {
 public:
  using Outcome = SettlementLedger::Outcome;
  using Postpone = SettlementLedger::Postpone;
  using Ticket = SettlementLedger::AckTicket;

  // At most this many images wait for the reads running (rule 6); more are
  // fetched by id.
  static constexpr size_t kMaxDeferred = 1 << 12;

  // `row_images`: the table may queue rows from binlog row images.
  // `images_wait`: another manager may have read and sent the table's rows
  // (a reload): no image is used before R0 (rule 6).
  RowReconciler(bool row_images, bool images_wait)
      : row_images_(row_images),
        fence_(images_wait ? Fence::kWait : Fence::kNone) {}

  // ---- Sends (rules 1 and 4) ----

  // `id` was handed to a subscriber at `mono`, sent for the (epoch+1)-th
  // time: it is in flight and owes a postpone.
  void Sent(const std::string& id, int64_t epoch, absl::Time mono);
  // A stream ended without writing `m` (sent at m.sent_at): whether it may
  // be queued again from memory at `now`, the table's ack wait being
  // `ack_wait` ns (rule 4). False while an ack of it runs or after one
  // committed whose echo the binlog has not shown. Unless an ack or hold
  // of it runs, the send's owed postpone is dropped (a refused message is
  // left due in MySQL, where a poll finds it).
  bool HandBack(const Message& m, int64_t now, int64_t ack_wait);

  // ---- msgq's own writes (rules 1, 2, 5 and 7) ----

  // An ack of `ids` was accepted: they are in flight until AckDone, and an
  // owed postpone is cancelled (restored if the ack fails).
  Ticket BeginAck(std::vector<std::string> ids);
  // A nack, an extend or msgq's own death of `ids`: in flight until
  // HoldDone; owed postpones stay owed (the round writes them first).
  Ticket BeginHold(std::vector<std::string> ids);
  // A round takes the owed postpones of sends made by `sent_by` (and those
  // a hold waits for), to write them.
  std::vector<Postpone> TakePostpones(absl::Time sent_by);
  // A round (or the ack lane) takes the acks of `ids` for writing: until
  // AckDone (of every ack of the id taken, retries of held-back ones
  // included) the binlog's ack of them is msgq's own.
  void AcksWriting(const std::vector<std::string>& ids);
  // The postpones `taken` finished with `outcome`; `written` are the same
  // postpones with the time_next each wrote, in the round that started at
  // `now`, committed as `gtid` (WriteGtid). Committed ones are remembered
  // until their echo (rules 5, 7).
  void PostponesDone(const std::vector<Postpone>& taken,
                     const std::vector<Postponement>& written, Outcome outcome,
                     int64_t now, const std::optional<std::string>& gtid = {});
  // An ack finished, committed as `gtid` (WriteGtid); a failed one was not
  // msgq's ack after all (unless another ack of the id is being written
  // or committed before it).
  void AckDone(const Ticket& ticket, Outcome outcome,
               const std::optional<std::string>& gtid = {});
  // A nack, extend or death finished, written in the round that started
  // at `now`. `written`: the time_next each row the hold may have
  // rescheduled got (nack retries, extends; not deaths); committed ones
  // are remembered until their echo (rule 7).
  void HoldDone(const Ticket& ticket, Outcome outcome,
                const std::vector<Postponement>& written, int64_t now);

  // ---- Reads (rules 1 to 3, 6) ----

  // A poll or a fetch starts reading; returns its number for ReadEnds.
  uint64_t ReadStarts();
  // What rule 6 decided of the images deferred while reads ran.
  struct Deferred {
    std::vector<RowChange> images;  // queue from the image
    std::vector<std::string> read;  // read again (fetch by id)
  };
  // Read `read` ended at `now`; `rows` (null when it failed) loses the
  // rows that are stale by rule 2 or 3; `at` is the position of its
  // snapshot (MessageStore::read_position(); unknown when the store did not
  // say). Call before any row is queued. When no read runs any more, the
  // deferred images are decided (rule 6): queue them after the rows.
  Deferred ReadEnds(uint64_t read, std::vector<Message>* rows, int64_t now,
                    const BinlogPosition& at = {});
  // Whether a due row read from MySQL (or its image) may be queued: not
  // while it is in flight (rule 1).
  bool MayQueue(absl::string_view id) const { return !ledger_.InFlight(id); }
  // `id` is queued: when the binlog showed the commit that made it due
  // (Unix ns), 0 when it did not.
  int64_t Queued(absl::string_view id);

  // ---- Binlog ----

  // What the manager does with a change the binlog showed.
  enum class BinlogAction {
    kGone,         // acked, dead or deleted: out of the cache
    kOwn,          // msgq's own write (rules 1 and 5): nothing
    kNotReading,   // changed, but the manager reads nothing now
    kScheduled,    // changed, due later: out of the cache, a round then
    kDueIdle,      // changed and due, but nobody subscribes: out of the cache
    kDueImage,     // changed and due: queue its row image (rule 6)
    kDueDeferred,  // changed and due, a read runs: ReadEnds decides (rule 6)
    kDueRead,      // changed and due: read it again
  };
  struct BinlogVerdict {
    BinlogAction action = BinlogAction::kOwn;
    // kGone: an ack msgq did not write (an application's UPDATE).
    bool acked_by_sql = false;
  };
  // The binlog showed `c` at `now`. `reading`: the manager reads
  // the table now (it owns it and is not paused); `subscribed`: someone
  // would receive a due row.
  BinlogVerdict OnBinlogChange(const RowChange& c, int64_t now, bool reading,
                               bool subscribed);
  // A new owner: no row image is used before R0, the position of the first
  // read that starts after this call (rule 6).
  void ImagesWait() { WaitForRead(); }

  // ---- Views of the ledger ----

  bool InFlight(absl::string_view id) const { return ledger_.InFlight(id); }
  size_t in_flight() const { return ledger_.in_flight(); }
  bool HasOwed() const { return ledger_.HasOwed(); }
  absl::Time OldestOwedAt() const { return ledger_.OldestOwedAt(); }
  bool PostponesPending() const { return ledger_.PostponesPending(); }

 private:
  // Rule 6, for a due change `c` of an id not in flight.
  bool ImageUsable(const RowChange& c) const;
  // Rule 6: no image until a read that starts after now ends with a
  // position.
  void WaitForRead() {
    fence_ = Fence::kWait;
    wait_from_ = next_read_;
  }
  // Rule 6: read `read` ended with rows or not (`returned`) at `at`.
  void MoveFence(uint64_t read, bool returned, const BinlogPosition& at);
  // Rule 2: remembers `ids` when a read runs.
  void LeftFlight(const std::vector<std::string>& ids);
  // Rule 7: msgq's latest write of `p.id` committed with `p.time_next`,
  // in a round that started at `now`.
  void OwnWriteCommitted(const Postponement& p, int64_t now);
  // Rule 7: `ids` left flight; what the binlog showed of them meanwhile
  // is forgotten.
  void ForgetShownInFlight(const std::vector<std::string>& ids);
  // Rule 7: whether a write of msgq's of `c.id` committed after `c` (its
  // echo is still to come); uses the write's fact up when `c` is its echo.
  bool OlderThanOwnWrite(const RowChange& c);
  // Rule 5: an ack of `id` is being written, or one committed awaits its
  // echo.
  bool OwnAckPending(absl::string_view id) const {
    return acks_writing_.contains(id) || own_echoes_.AckAwaits(id);
  }

  const bool row_images_;
  // Rule 6. kNone: nothing read, no predecessor (every image is newer);
  // kAt: images after read_at_; kWait: none until a read numbered
  // wait_from_ or later ends with a position.
  enum class Fence { kNone, kAt, kWait };
  Fence fence_;
  BinlogPosition read_at_;
  uint64_t wait_from_ = 0;
  uint64_t next_read_ = 0;
  // Rule 6: images that came while a read ran, and whether their id was
  // since returned by a read from before the change, sent, or given to a
  // write of msgq's (bounded by kMaxDeferred).
  struct Waiting {
    RowChange change;
    bool read = false;
  };
  // Rule 6: `ids` were sent or given to a write: their deferred images are
  // read by id instead.
  void Touched(const std::vector<std::string>& ids);
  absl::flat_hash_map<std::string, Waiting> deferred_;
  SettlementLedger ledger_;
  int reads_running_ = 0;
  absl::flat_hash_set<std::string> left_while_reading_;
  BinlogExpectations expected_{1 << 16, 10'000'000'000};
  // Rule 5: acks taken for writing and not finished, per id, and those of
  // them whose echo the binlog showed meanwhile (both bounded by them).
  absl::flat_hash_map<std::string, int> acks_writing_;
  absl::flat_hash_set<std::string> acks_echoed_;
  OwnEchoes own_echoes_;
  // Rule 7: id -> when its latest own write was written; and the
  // time_next it wrote, valid while own_writes_ has the id.
  RecentIds own_writes_{1 << 16, 60'000'000'000};
  absl::flat_hash_map<std::string, int64_t> own_write_next_;
  // Rule 7: the time_next of the last change the binlog showed of each id
  // in flight (an own write's echo may come before its result), until the
  // id leaves flight (bounded by the ids in flight).
  absl::flat_hash_map<std::string, int64_t> shown_in_flight_;
  RecentIds seen_{1 << 16, 600'000'000'000};
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_ROW_RECONCILER_H_
