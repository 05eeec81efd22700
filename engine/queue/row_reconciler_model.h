// The model of row_reconciler_interleaving_test.cc (test-only): the truth
// of a few message rows in MySQL and the binlog, the manager as the test
// plays it around a RowReconciler, and the Explorer that runs every order
// of their events to a depth (row_reconciler_explorer.cc), judging each
// answer of the reconciler against the truth.
//
// The world. Each row has a history of committed versions. An
// application's INSERT, UPDATE (a new priority and due time_next), UPDATE
// that acks it, or DELETE commits a version the binlog shows at once but a
// read may see only after a separate "visible" event (the binlog can run
// ahead of InnoDB). msgq's own writes commit when their statement runs and
// are visible at once: a round's postpones (epoch + 1, time_next later;
// unacked rows only) and nacks (time_next later, if the row's epoch is the
// delivery's + 1), and acks (unacked rows only); an own write waits for a
// commit on its row to become visible (row locks). The binlog shows every
// version in commit order, later: a "binlog" event hands the oldest one to
// the reconciler. Each transaction has a GTID (one per application change,
// per ack, per round's write; none for a write that changed nothing),
// which the binlog's changes carry and msgq's writes report with their
// result, as MariaDB does; a transaction's binlog position is its sequence
// number. A read takes a consistent snapshot when it starts: the position
// R of the last transaction before the first one not yet visible, and of
// each row its latest version at or before R (as MariaDB's
// Binlog_snapshot_position is exact); it ends later and reports R. While
// a read runs, the reconciler defers images, and decides them as it ends. One
// "later" event moves the clock past the ack wait and every postpone: postponed
// rows are due again.
//
// The manager is played by the test: a cache (one copy per id, added only
// when absent, as MessageCache), sends from it, deliveries that a stream may
// hand back, acks (one running per id), nacks of the latest delivery (one
// per id), one round at a time that takes the owed postpones and the
// nacks, commits them, and reports committed, transient or permanent, and
// emptying the cache (a pause, a change of ownership: the images then
// wait for the next read's position, RowReconciler::ImagesWait).
//
// Options leave out application changes, nacks or the clock passing the
// ack wait; others model a server that names no GTIDs, or reads that
// report no position. Left out (each has an example in
// row_reconciler_test.cc): facts evicted for room, another owner's reads
// and sends, overlapping reads (the manager runs one at a time), an
// application's UPDATE to a later time.
#ifndef MSGQ_ENGINE_QUEUE_ROW_RECONCILER_MODEL_H_
#define MSGQ_ENGINE_QUEUE_ROW_RECONCILER_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/queue/row_reconciler.h"

namespace msgq::reconciler_test {

using Action = RowReconciler::BinlogAction;
using Outcome = RowReconciler::Outcome;

constexpr int64_t kMilli = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;
constexpr int64_t kAckWait = 2 * kSecond;
constexpr int64_t kLater = kT0 + 4 * kSecond;  // past every postpone

// One committed version of a row.
struct Version {
  bool exists = false;  // false: not inserted yet, or deleted
  bool acked = false;
  int64_t priority = 0;
  int64_t time_next = 0;
  int64_t epoch = 0;
  bool own = false;          // written by msgq
  bool newly_acked = false;  // this commit acked it
  bool image = false;        // the binlog carries its row image
  int content = 0;           // the application's version of the message
  int64_t commit_s = 0;      // the rows event's timestamp
  int64_t gtid = 0;          // its transaction's sequence number
  bool reported = false;     // own: its write's result reached the manager
  bool ignored = false;      // app: the binlog showed it as msgq's own
  bool Gone() const { return !exists || acked; }
};

// A copy of a row the manager holds: the version it came from.
struct Copy {
  Message m;
  int version = 0;
  int content = 0;
  bool d7 = false;  // a stale read let through by D7 (no read position)
};

struct Delivery {
  Copy copy;
  int send = 0;          // the row's send count at this send
  bool settled = false;  // its postpone or an ack committed
};

struct Row {
  std::vector<Version> history = {Version{}};
  bool pending_visible = false;  // the last version is not visible yet
  int delivered = 0;             // the binlog showed versions up to this
  int contents = 0;
  int sends = 0;
  std::optional<Copy> queued;
  std::optional<Delivery> delivery;  // may still be handed back
  int acks = 0;                      // running
  int holds = 0;                     // running
  bool left_during_read = false;     // a write of it ended during the read
  int shown_at_read = 0;             // `delivered` when the read started
  // A hand-back was queued again since the binlog's last change of it.
  bool handed_back = false;
  int read_queued = -1;  // the newest version a read queued
  int Visible() const {
    return static_cast<int>(history.size()) - (pending_visible ? 2 : 1);
  }
};

struct OpenAck {
  std::string id;
  RowReconciler::Ticket ticket;
  bool committed = false;
  int made = -1;     // the version its commit made
  int64_t gtid = 0;  // its transaction's (0: it changed nothing)
};

struct OpenHold {
  std::string id;
  RowReconciler::Ticket ticket;
  int64_t epoch = 0;  // of the delivery it names
  bool taken = false;
  int64_t time_next = 0;  // what the round writes (when taken)
};

struct Round {
  std::vector<RowReconciler::Postpone> taken;
  std::vector<Postponement> written;
  std::map<std::string, int> sends;  // the send each postpone covers
  std::vector<size_t> holds;         // indexes into World::holds
  bool committed = false;
  std::vector<std::pair<std::string, int>> made;  // versions it committed
  int64_t gtid = 0;  // its transaction's (0: it changed nothing)
};

struct Counts {
  long states = 0;
  long reads_queued = 0;
  long handbacks_queued = 0;
  long images_queued = 0;
  long deferred_queued = 0;  // images deferred while a read ran, then queued
  // D2, D4, D7 and D8 at [2], [4], [7], [8] (D1, D3, D5 and D6 are
  // failures).
  long deviations[9] = {};
};

struct World {
  RowReconciler rec{/*row_images=*/true, /*images_wait=*/false};
  std::map<std::string, Row> rows;
  std::deque<std::pair<std::string, int>> binlog;  // (id, version)
  std::vector<OpenAck> acks;
  std::vector<OpenHold> holds;
  std::optional<Round> round;
  std::optional<std::map<std::string, int>> read;  // snapshot: id -> version
  int64_t read_at = 0;                             // the read's position R
  uint64_t read_number = 0;             // RowReconciler::ReadStarts's
  std::map<std::string, int> deferred;  // images deferred: id -> version
  bool later = false;
  int64_t writes = 0;  // distinct time_next for msgq's writes
  int64_t gtids = 0;   // the last transaction's sequence number
  int64_t Now() const { return later ? kLater : kT0; }
  absl::Time Mono() const { return absl::FromUnixNanos(Now()); }
};

inline bool Due(const Version& v, int64_t now) {
  return v.exists && !v.acked && v.time_next <= now;
}

inline Message MessageOf(const std::string& id, const Version& v) {
  Message m;
  m.id = id;
  m.priority = v.priority;
  m.time_next = v.time_next;
  m.epoch = v.epoch;
  m.row = std::make_shared<PackedRow>();
  return m;
}

// The GTID text of transaction `seq` ("" for none, as a write that
// changed nothing reports).
inline std::string GtidText(int64_t seq) {
  return seq == 0 ? "" : "0-1-" + std::to_string(seq);
}

// Where transaction `seq` ends in the binlog.
inline BinlogPosition PositionOf(int64_t seq) {
  return {"binlog.000001", static_cast<uint64_t>(seq)};
}

inline RowChange ChangeOf(const std::string& id, const Version& v,
                          const Version& before) {
  RowChange c;
  c.id = id;
  c.gtid = GtidText(v.gtid);
  c.position = PositionOf(v.gtid);
  c.event_time = v.commit_s;
  c.epoch = v.epoch;
  if (!v.exists) {  // a DELETE: its before image
    c.deleted = true;
    c.priority = before.priority;
    if (before.acked) {
      c.time_acked = kT0;
    } else {
      c.time_next = before.time_next;
    }
    return c;
  }
  c.priority = v.priority;
  if (v.acked) {
    c.time_acked = kT0;
    c.newly_acked = v.newly_acked;
  } else {
    c.time_next = v.time_next;
    if (v.image) c.row = std::make_shared<PackedRow>();
  }
  return c;
}

// ---- The truth, and what the manager knows of it ----

// A subscriber may hold an unsettled send of `id`.
inline bool Outstanding(const Row& r) {
  return r.delivery.has_value() && !r.delivery->settled;
}

// A write of msgq's on `id` runs.
inline bool Writing(const World& w, const std::string& id) {
  const Row& r = w.rows.at(id);
  if (r.acks > 0 || r.holds > 0) return true;
  if (!w.round.has_value()) return false;
  return w.round->sends.count(id) > 0;
}

// Why `copy` of `id` is stale by what the manager knows: 0 not stale;
// 1 msgq's own ack committed and reported after it, not yet shown by the
// binlog (D1, a failure); 2 an application's change the binlog
// showed as msgq's own (D2); 9 other.
inline int Stale(const Row& r, const Copy& copy) {
  int why = 0;
  for (int j = copy.version + 1; j < static_cast<int>(r.history.size()); ++j) {
    const Version& v = r.history[j];
    const bool known = j <= r.delivered || (v.own && v.reported);
    if (!known) continue;
    if (v.own && !v.Gone()) continue;  // msgq's postpone or nack
    if (v.own && j > r.delivered) {
      why = std::max(why, 1);
    } else if (!v.own && v.ignored && !v.Gone()) {
      why = std::max(why, 2);
    } else {
      why = 9;
    }
  }
  return why;
}

// Commits `v` as `id`'s next version, in transaction `gtid` (0: a
// transaction of its own); returns its index.
inline int Commit(World& w, const std::string& id, Version v,
                  int64_t gtid = 0) {
  Row& r = w.rows[id];
  v.commit_s = w.Now() / kSecond;
  v.gtid = gtid != 0 ? gtid : ++w.gtids;
  r.history.push_back(v);
  const int j = static_cast<int>(r.history.size()) - 1;
  w.binlog.emplace_back(id, j);
  return j;
}

// msgq's own change of `id`'s last version.
inline Version Own(const World& w, const std::string& id) {
  Version v = w.rows.at(id).history.back();
  v.own = true;
  v.image = false;
  v.reported = false;
  v.newly_acked = false;
  return v;
}

// A write of `id` reported its result to the manager.
inline void Report(World& n, const std::string& id, int made) {
  Row& row = n.rows[id];
  if (made >= 0) row.history[made].reported = true;
  row.left_during_read |= n.read.has_value();
}

// The round's statements run: its postpones, then its nacks.
inline void CommitRound(World& n) {
  Round& round = *n.round;
  round.committed = true;
  for (const Postponement& p : round.written) {
    Version v = Own(n, p.id);
    if (!v.exists || v.acked) continue;
    v.epoch += 1;
    v.time_next = p.time_next;
    if (round.gtid == 0) round.gtid = ++n.gtids;
    round.made.emplace_back(p.id, Commit(n, p.id, v, round.gtid));
  }
  for (size_t i : round.holds) {
    const OpenHold& h = n.holds[i];
    Version v = Own(n, h.id);
    if (!v.exists || v.acked || v.epoch != h.epoch + 1) continue;
    v.time_next = h.time_next;
    if (round.gtid == 0) round.gtid = ++n.gtids;
    round.made.emplace_back(h.id, Commit(n, h.id, v, round.gtid));
  }
}

// Runs every order of the events to a depth from an empty world, checking
// after each event (row_reconciler_interleaving_test.cc says what).
class Explorer {
 public:
  struct Options {
    std::vector<std::string> ids = {"a"};
    int depth = 8;
    bool app_changes = true;  // INSERT is always there
    bool nacks = true;
    bool later = true;
    // The manager drops what it queued (pause, resume, ownership).
    bool clear = true;
    // The server names GTIDs (MariaDB); false: changes carry none and
    // writes report none (MySQL without GTIDs), the fallbacks of rules 5
    // and 7.
    bool gtids = true;
    // Reads report their snapshot's position; false: they report none
    // (MySQL), the fallbacks of rules 3 and 6.
    bool read_positions = true;
  };

  explicit Explorer(Options options) : o_(std::move(options)) {}

  void Run() {
    World w;
    for (const std::string& id : o_.ids) w.rows[id];
    Visit(w, 0);
  }
  const Counts& counts() const { return counts_; }

 private:
  // Records a failure of kind `what` (the first path of each is reported).
  void Fail(const std::string& what);
  void Check(const World& w);
  void Step(const World& w, int depth, const std::string& name,
            const std::function<void(World&)>& apply);
  void AppEvents(const World& w, int depth, const std::string& id);
  void ManagerEvents(const World& w, int depth, const std::string& id);
  void HandBack(World& n, const std::string& id);
  void BinlogEvent(World& n);
  void Image(World& n, const std::string& id, int j);
  void ReadEvents(const World& w, int depth);
  void ReadEnd(World& n);
  void RoundEvents(const World& w, int depth);
  void EndRound(World& n, Outcome o);
  void AckEvents(const World& w, int depth);
  void Visit(const World& w, int depth);

  const Options o_;
  Counts counts_;
  std::vector<std::string> path_;
  std::map<std::string, std::string> failures_;  // kind -> first path
};

}  // namespace msgq::reconciler_test

#endif  // MSGQ_ENGINE_QUEUE_ROW_RECONCILER_MODEL_H_
