#include "engine/queue/row_reconciler.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msgq {

void RowReconciler::Sent(const std::string& id, int64_t epoch,
                         absl::Time mono) {
  ledger_.Sent(id, epoch, mono);
  changed_since_sent_.Erase(id);
  Touched({id});
}

void RowReconciler::Touched(const std::vector<std::string>& ids) {
  if (deferred_.empty()) return;
  for (const std::string& id : ids) {
    if (auto it = deferred_.find(id); it != deferred_.end()) {
      it->second.read = true;
    }
  }
}

bool RowReconciler::HandBack(const Message& m, int64_t now, int64_t ack_wait) {
  // Past the ack wait the row is due again in MySQL (or already sent
  // again): the poll owns it now.
  if (m.sent_at != 0 && now >= m.sent_at + ack_wait) return false;
  // While an ack or hold runs, its outcome settles the message. Leaving
  // flight here is not rule 2's: the hand-back wrote nothing.
  std::vector<std::string> left;
  if (!ledger_.HandBack(m.id, &left)) return false;
  ForgetShownInFlight(left);
  // Nor once msgq's own ack of it committed, until the binlog shows it:
  // MySQL has it acked, and nothing else the manager knows says so yet.
  if (OwnAckPending(m.id)) return false;
  // Queued again from memory, not read again: a row the binlog showed
  // deleted or acked since the send (or changed once it left flight) is
  // left to MySQL, where a poll finds it if it is due.
  return !changed_since_sent_.Contains(m.id);
}

RowReconciler::Ticket RowReconciler::BeginAck(std::vector<std::string> ids) {
  Touched(ids);
  return ledger_.BeginAck(std::move(ids));
}

RowReconciler::Ticket RowReconciler::BeginHold(std::vector<std::string> ids) {
  Touched(ids);
  return ledger_.BeginHold(std::move(ids));
}

std::vector<RowReconciler::Postpone> RowReconciler::TakePostpones(
    absl::Time sent_by) {
  return ledger_.TakePostpones(sent_by);
}

void RowReconciler::AcksWriting(const std::vector<std::string>& ids) {
  // Before the write: the binlog may show it before the result is back.
  for (const std::string& id : ids) ++acks_writing_[id];
}

void RowReconciler::PostponesDone(const std::vector<Postpone>& taken,
                                  const std::vector<Postponement>& written,
                                  Outcome outcome,
                                  const std::optional<std::string>& gtid) {
  const std::vector<std::string> left = ledger_.PostponesDone(taken, outcome);
  LeftFlight(left);
  if (outcome == Outcome::kCommitted) {
    own_echoes_.Committed(gtid, {}, written);
    OwnWritesCommitted(written, gtid);
  }
  ForgetShownInFlight(left);
}

void RowReconciler::SettleDone(const Ticket& ticket, Outcome outcome,
                               const std::optional<std::string>& gtid) {
  const std::vector<std::string> left = ledger_.SettleDone(ticket, outcome);
  LeftFlight(left);
  ForgetShownInFlight(left);
  // Committed acks are known until their echo passes, so that a failed
  // retry does not forget them (rules 4, 5, 7); not those whose echo the
  // binlog showed while they were written.
  std::vector<std::string> committed;
  for (const std::string& id : ticket.ids) {
    bool echoed = acks_echoed_.contains(id);
    if (auto it = acks_writing_.find(id); it != acks_writing_.end()) {
      if (--it->second == 0) {
        acks_writing_.erase(it);
        acks_echoed_.erase(id);
      }
    }
    if (outcome == Outcome::kCommitted && !echoed) committed.push_back(id);
  }
  if (!committed.empty()) own_echoes_.Committed(gtid, committed, {});
}

void RowReconciler::HoldDone(const Ticket& ticket, Outcome outcome,
                             const std::vector<Postponement>& written,
                             const std::optional<std::string>& gtid) {
  // Holds are settled by the table's own round, never while it reads, so
  // rule 2 has nothing to remember here; it is kept for uniformity.
  const std::vector<std::string> left = ledger_.SettleDone(ticket, outcome);
  LeftFlight(left);
  if (outcome == Outcome::kCommitted) OwnWritesCommitted(written, gtid);
  ForgetShownInFlight(left);
}

void RowReconciler::OwnWritesCommitted(const std::vector<Postponement>& written,
                                       const std::optional<std::string>& gtid) {
  if (gtid.has_value()) {  // OwnEchoes knows whether its echo passed
    own_echoes_.Committed(gtid, {}, {}, written);
    return;
  }
  // Without a GTID: an echo shown while the id was in flight has passed.
  std::vector<Postponement> awaited;
  for (const Postponement& p : written) {
    auto it = shown_in_flight_.find(p.id);
    if (it == shown_in_flight_.end() || it->second != p.time_next) {
      awaited.push_back(p);
    }
  }
  own_echoes_.Committed(gtid, {}, {}, awaited);
}

void RowReconciler::ForgetShownInFlight(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) shown_in_flight_.erase(id);
}

void RowReconciler::LeftFlight(const std::vector<std::string>& ids) {
  if (reads_running_ == 0) return;
  left_while_reading_.insert(ids.begin(), ids.end());
}

uint64_t RowReconciler::ReadStarts() {
  ++reads_running_;
  return events_++;
}

RowReconciler::Deferred RowReconciler::ReadEnds(uint64_t read,
                                                std::vector<Message>* rows,
                                                const BinlogPosition& at) {
  if (rows != nullptr) {
    if (row_images_) {
      MoveFence(read, !rows->empty(), at);
      for (const Message& m : *rows) {
        auto it = deferred_.find(m.id);
        if (it == deferred_.end()) continue;
        if (IncludedIn(it->second.change.position, at) == true) {
          deferred_.erase(it);  // the read has the change: nothing to add
        } else {
          it->second.read = true;  // it may send an older copy: read again
        }
      }
    }
    std::erase_if(*rows, [&](const Message& m) {
      return left_while_reading_.contains(m.id) ||
             last_changes_.Stale(m.id, read, at);
    });
  }
  --reads_running_;
  last_changes_.ReadEnded(at, rows != nullptr, reads_running_ == 0);
  Deferred decided;
  if (reads_running_ > 0) return decided;
  left_while_reading_.clear();
  for (auto& [id, w] : deferred_) {
    if (!w.read && !ledger_.InFlight(id) && ImageUsable(w.change)) {
      decided.images.push_back(std::move(w.change));
    } else {
      decided.read.push_back(id);
    }
  }
  deferred_.clear();
  return decided;
}

void RowReconciler::MoveFence(uint64_t read, bool returned,
                              const BinlogPosition& at) {
  if (fence_ == Fence::kWait) {
    // R0: the first read that started after the wait began.
    if (read >= wait_from_ && at.known()) {
      fence_ = Fence::kAt;
      read_at_ = at;
    } else if (returned && !at.known()) {
      WaitForRead();  // its rows are of an unknown place
    }
    return;
  }
  if (!returned) return;  // it sent nothing: its place does not matter
  if (fence_ == Fence::kNone) {
    if (at.known()) {
      fence_ = Fence::kAt;
      read_at_ = at;
    } else {
      WaitForRead();
    }
    return;
  }
  // kAt: the latest read counts; one of no place or of another server's
  // places stops images until a read after it has one.
  const std::optional<bool> older = IncludedIn(read_at_, at);
  if (!older.has_value()) {
    WaitForRead();
  } else if (*older) {
    read_at_ = at;
  }
}

int64_t RowReconciler::Queued(absl::string_view id) {
  return seen_.Take(id).value_or(0);
}

RowReconciler::BinlogVerdict RowReconciler::OnBinlogChange(const RowChange& c,
                                                           int64_t now,
                                                           bool reading,
                                                           bool subscribed) {
  BinlogVerdict v;
  // A later change of a row replaces its deferred image (rule 6).
  deferred_.erase(c.id);
  // The binlog is past every transaction before c's: their echoes passed.
  own_echoes_.Shown(c.gtid);
  // A purge deletes a row acked long before: no read can show it due.
  if (!(c.deleted && c.time_acked.has_value())) {
    last_changes_.Shown(c.id, c.position, events_, reads_running_ > 0);
  }
  ++events_;
  if (c.deleted || c.time_acked.has_value() || !c.time_next.has_value()) {
    v.action = BinlogAction::kGone;
    if (c.newly_acked) {
      const bool committed = own_echoes_.TakeAck(c);
      const bool writing = acks_writing_.contains(c.id);
      if (writing && !committed) acks_echoed_.insert(c.id);
      v.acked_by_sql = !committed && !writing;
    }
    // A purged row was acked long before: it was never sent since.
    if (!(c.deleted && c.time_acked.has_value())) {
      changed_since_sent_.Put(c.id, 0);
    }
    (void)own_echoes_.OlderThanWrite(c);  // no echo of a write comes now
    seen_.Erase(c.id);
    return v;
  }
  // Rule 7. Before the echo of a write of msgq's that committed (and left
  // flight), the binlog shows only older commits of the row; the echo
  // itself uses the fact up.
  const bool older_than_own = OlderThanOwnWrite(c);
  // msgq's own postpones and acks of ids in flight: nothing new.
  if (ledger_.InFlight(c.id)) {
    shown_in_flight_[c.id] = *c.time_next;  // maybe an echo (rule 7)
    return v;                               // kOwn
  }
  // The echo of msgq's own postpone, read after the id left flight: if the
  // batch was handed back, the message is queued again and stays.
  if (own_echoes_.TakePostpone(c)) return v;  // kOwn
  changed_since_sent_.Put(c.id, 0);
  // The owner reads it; a new owner (or a resumed table) polls first.
  if (!reading) {
    v.action = BinlogAction::kNotReading;
  } else if (*c.time_next > now) {
    seen_.Erase(c.id);  // on time, not "from its commit"
    v.action = BinlogAction::kScheduled;
  } else if (!subscribed) {
    v.action = BinlogAction::kDueIdle;  // the first subscriber polls
  } else {
    seen_.Put(c.id, now);
    if (older_than_own || !row_images_ || c.row == nullptr) {
      v.action = BinlogAction::kDueRead;
    } else if (reads_running_ > 0 && deferred_.size() < kMaxDeferred) {
      // The running reads' positions are not known yet (rule 6).
      deferred_.insert_or_assign(c.id, Waiting{c});
      v.action = BinlogAction::kDueDeferred;
    } else {
      v.action = reads_running_ == 0 && ImageUsable(c) ? BinlogAction::kDueImage
                                                       : BinlogAction::kDueRead;
    }
  }
  return v;
}

bool RowReconciler::ImageUsable(const RowChange& c) const {
  if (!row_images_ || c.row == nullptr) return false;
  switch (fence_) {
    case Fence::kNone:
      return true;  // no read yet, no predecessor
    case Fence::kWait:
      return false;
    case Fence::kAt:
      // After every read that returned rows, and after R0: no read could
      // have returned the row since this commit.
      return IncludedIn(c.position, read_at_) == false;
  }
  return false;
}

}  // namespace msgq
