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
// What it keeps (each bounded, none for a time; forgetting a fact early
// only loses a check or a count, never a message):
//   in flight       the SettlementLedger: ids sent or being acked, nacked,
//                   extended or killed, and the postpone owed for each;
//   left reading    ids that left flight while a read ran (until the reads
//                   end);
//   last changes    LastChanges: per id, the position of the last change
//                   the binlog showed, while a read runs or while it is
//                   after every ended read's (at most kMaxChanges);
//   changed since   ids the binlog showed gone, or changed by a write not
//   sent            msgq's, since msgq last sent them (at most 65,536);
//   acks writing    ids msgq is acking, from the write's start until its
//                   result (bounded by the acks running);
//   own echoes      OwnEchoes: msgq's committed acks, postpones, nacks and
//                   extends, by the GTID of their transaction, until the
//                   binlog has passed it (bounded by the writes whose echo
//                   is due; matched by id where the server names no GTIDs);
//   shown in flight what the binlog last showed of each id in flight,
//                   until it leaves flight;
//   read fence      with row images: the latest position R of a read that
//                   returned rows (or R0, see rule 6), and the images that
//                   came while a read ran, until the reads end (at most
//                   kMaxDeferred);
//   seen            when the binlog showed a due row's commit, until the
//                   row is queued (at most 65,536; commit_to_send only).
//
// The rules, which together keep invariant 2 of docs/architecture.md#invariants
// (no stale copy of a row is ever queued). A read's position is R, a
// change's E (where its rows event ends), a write of msgq's W (its GTID);
// on one binlog they are in commit order (binlog_position.h).
//  1. In flight is msgq's. An id is in flight from its send, or from an
//     accepted ack, nack, extend or death, until each write msgq owes or
//     runs for it has finished (settlement_ledger.h). A read of an id in
//     flight is never queued, and a change of it that leaves it unacked is
//     msgq's own write and is ignored; only a change showing it gone counts.
//  2. A read at R drops an id whose settling write committed at W > R.
//     Kept as: an id that leaves flight while a read runs is dropped from
//     it. That drops the W <= R cases too, which changes nothing: only the
//     ack lane settles while the table's round reads, and a row acked at
//     W <= R is not due in the read.
//  3. A read at R drops a row whose last change shown is at E > R (the
//     change itself was acted on: queued, read by id or removed). Where E
//     and R do not compare (a read or change without a position, another
//     log's file name), it drops a row changed while it ran.
//  4. A hand-back is queued again from memory only while it is still the
//     send's (within its ack wait), when no ack or hold of it runs, no ack
//     of it committed awaits its echo, and the binlog has not shown it gone
//     or changed by a write not msgq's since the send.
//  5. Own echoes. A change whose GTID is that of a committed ack or
//     postpone of msgq's is its echo: a binlog ack of it is not an
//     application's UPDATE (acked_by_sql), and a message handed back and
//     queued again stays queued. An ack shown while msgq's ack of the id is
//     being written is msgq's too (D4). Without GTIDs, an id's next ack (or
//     change with the time_next written) after a committed write is its
//     echo.
//  6. Images. An image at E is queued only when E is after the R of every
//     read that returned rows (the largest R is kept) and after R0, that of
//     the first read that started after this manager was built or granted
//     the table. An image that comes while a read runs is deferred and
//     decided as the reads end (read by id when a read before E returned
//     the id, or msgq sent, acked, nacked or extended it meanwhile; nothing
//     when a read at or after E returned it). A read with rows and no
//     comparable R stops images until a later read ends with one.
//  7. Order. A change of an id shown before the echo of msgq's committed
//     write W of it (until the binlog shows W or passes it) is older than
//     W and is never queued as an image (the row is read by id). Without
//     GTIDs, the wait ends at the change showing the time_next written (or
//     the id gone), or when shown before the write's result.
// The exhaustive interleaving test (row_reconciler_interleaving_test.cc)
// checks these answers against a model of MySQL's row, and names the
// cases where they are knowingly not exact (D2, D4, D7, D8).
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
#include "engine/queue/last_changes.h"
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
  using Ticket = SettlementLedger::SettleTicket;

  // At most this many images wait for the reads running (rule 6); more are
  // fetched by id.
  static constexpr size_t kMaxDeferred = 1 << 12;
  // At most this many ids' last changes are kept (rule 3); past it they are
  // forgotten, and a read that may be older than one of them drops all its
  // rows (a later poll reads them).
  static constexpr size_t kMaxChanges = 1 << 16;

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
  // `ack_wait` ns (rule 4). False while an ack of it runs, after one
  // committed whose echo the binlog has not shown, or once the binlog
  // showed it gone or changed by others since the send. Unless an ack or hold
  // of it runs, the send's owed postpone is dropped (a refused message is
  // left due in MySQL, where a poll finds it).
  bool HandBack(const Message& m, int64_t now, int64_t ack_wait);

  // ---- msgq's own writes (rules 1, 2, 5 and 7) ----

  // An ack of `ids` was accepted: they are in flight until SettleDone, and an
  // owed postpone is cancelled (restored if the ack fails).
  Ticket BeginAck(std::vector<std::string> ids);
  // A nack, an extend or msgq's own death of `ids`: in flight until
  // HoldDone; owed postpones stay owed (the round writes them first).
  Ticket BeginHold(std::vector<std::string> ids);
  // A round takes the owed postpones of sends made by `sent_by` (and those
  // a hold waits for), to write them.
  std::vector<Postpone> TakePostpones(absl::Time sent_by);
  // A round (or the ack lane) takes the acks of `ids` for writing: until
  // SettleDone (of every ack of the id taken, retries of held-back ones
  // included) the binlog's ack of them is msgq's own.
  void AcksWriting(const std::vector<std::string>& ids);
  // The postpones `taken` finished with `outcome`; `written` are the same
  // postpones with the time_next each wrote, committed as `gtid`
  // (WriteGtid). Committed ones are remembered until
  // their echo passes (rules 5, 7).
  void PostponesDone(const std::vector<Postpone>& taken,
                     const std::vector<Postponement>& written, Outcome outcome,
                     const std::optional<std::string>& gtid = {});
  // An ack finished, committed as `gtid` (WriteGtid); a failed one was not
  // msgq's ack after all (unless another ack of the id is being written
  // or committed before it).
  void SettleDone(const Ticket& ticket, Outcome outcome,
                  const std::optional<std::string>& gtid = {});
  // A nack, extend or death finished, committed as `gtid` (WriteGtid).
  // `written`: the time_next each row the hold may have rescheduled got
  // (nack retries, extends; not deaths); committed ones are remembered
  // until their echo (rule 7).
  void HoldDone(const Ticket& ticket, Outcome outcome,
                const std::vector<Postponement>& written,
                const std::optional<std::string>& gtid = {});

  // ---- Reads (rules 1 to 3, 6) ----

  // A poll or a fetch starts reading; returns its number for ReadEnds.
  uint64_t ReadStarts();
  // What rule 6 decided of the images deferred while reads ran.
  struct Deferred {
    std::vector<RowChange> images;  // queue from the image
    std::vector<std::string> read;  // read again (fetch by id)
  };
  // Read `read` ended; `rows` (null when it failed) loses the
  // rows that are stale by rule 2 or 3; `at` is the position R of its
  // snapshot (MessageStore::read_position(); unknown when the store did not
  // say). Call before any row is queued. When no read runs any more, the
  // deferred images are decided (rule 6): queue them after the rows.
  Deferred ReadEnds(uint64_t read, std::vector<Message>* rows,
                    const BinlogPosition& at = {});
  // Whether a due row read from MySQL (or its image) may be queued: not
  // while it is in flight (rule 1).
  bool MayQueue(absl::string_view id) const { return !ledger_.InFlight(id); }
  // `id` is queued: when the binlog showed the commit that made it due
  // (Unix ns), 0 when it did not (or that fact was forgotten for room).
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
    wait_from_ = events_;
  }
  // Rule 6: read `read` ended with rows or not (`returned`) at `at`.
  void MoveFence(uint64_t read, bool returned, const BinlogPosition& at);
  // Rule 2: remembers `ids` when a read runs.
  void LeftFlight(const std::vector<std::string>& ids);
  // Rule 7: the rows `written` by a write of msgq's that committed as
  // `gtid`; without a GTID, those whose echo was shown while in flight are
  // left out.
  void OwnWritesCommitted(const std::vector<Postponement>& written,
                          const std::optional<std::string>& gtid);
  // Rule 7: `ids` left flight; what the binlog showed of them meanwhile
  // is forgotten.
  void ForgetShownInFlight(const std::vector<std::string>& ids);
  // Rule 7: whether a write of msgq's of `c.id` committed after `c` (its
  // echo is still to come); uses the write's fact up when `c` is its echo.
  bool OlderThanOwnWrite(const RowChange& c) {
    return OwnAckPending(c.id) || own_echoes_.OlderThanWrite(c);
  }
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
  // Reads started and changes shown, numbered in the order they came.
  uint64_t events_ = 0;
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
  // Rule 3 (at most kMaxChanges ids).
  LastChanges last_changes_{kMaxChanges};
  // Rule 4: ids the binlog showed gone, or changed by a write not msgq's,
  // since msgq last sent them (values unused).
  RecentIds changed_since_sent_{1 << 16};
  // Rule 5: acks taken for writing and not finished, per id, and those of
  // them whose echo the binlog showed meanwhile (both bounded by them).
  absl::flat_hash_map<std::string, int> acks_writing_;
  absl::flat_hash_set<std::string> acks_echoed_;
  OwnEchoes own_echoes_;
  // Rule 7: the time_next of the last change the binlog showed of each id
  // in flight, until the id leaves flight (bounded by the ids in flight):
  // without GTIDs, an own write's echo may come before its result.
  absl::flat_hash_map<std::string, int64_t> shown_in_flight_;
  // When the binlog showed each due row's commit, until it is queued (the
  // commit_to_send metric; a row read by id has no cache entry until then).
  RecentIds seen_{1 << 16};
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_ROW_RECONCILER_H_
