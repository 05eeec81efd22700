// The Explorer of row_reconciler_model.h: each event of the world, what it
// asks the RowReconciler, and the check of each answer against the truth
// (row_reconciler_interleaving_test.cc lists the checks and the known
// deviations D2, D4, D7 and D8).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/queue/row_reconciler_model.h"
#include "gtest/gtest.h"

namespace msgq::reconciler_test {

// Records a failure of kind `what` (the first path of each is reported).
void Explorer::Fail(const std::string& what) {
  if (failures_.count(what) == 0) {
    failures_[what] = absl::StrJoin(path_, " ");
    ADD_FAILURE() << what << "\n  after: " << failures_[what];
  }
}

void Explorer::Check(const World& w) {
  ++counts_.states;
  for (const auto& [id, r] : w.rows) {
    if (!r.queued.has_value()) continue;
    if (Outstanding(r)) Fail(absl::StrCat(id, " queued while held"));
    if (Stale(r, *r.queued) == 9 && !r.handed_back && !r.queued->d7) {
      Fail(absl::StrCat(id, " queued and known stale"));
    }
  }
}

void Explorer::Step(const World& w, int depth, const std::string& name,
                    const std::function<void(World&)>& apply) {
  World n = w;
  path_.push_back(name);
  apply(n);
  Check(n);
  Visit(n, depth + 1);
  path_.pop_back();
}

void Explorer::AppEvents(const World& w, int depth, const std::string& id) {
  const Row& r = w.rows.at(id);
  if (r.pending_visible) {
    Step(w, depth, "visible(" + id + ")",
         [id](World& n) { n.rows[id].pending_visible = false; });
    return;  // a second change waits for the first one's row lock
  }
  const Version& last = r.history.back();
  auto app = [&](const std::string& name, auto change) {
    Step(w, depth, name + "(" + id + ")", [this, id, change](World& n) {
      Row& row = n.rows[id];
      Version v = row.history.back();
      v.own = false;
      v.newly_acked = false;
      v.image = false;
      v.reported = false;
      change(v, row);
      Commit(n, id, v);
      row.pending_visible = true;
    });
  };
  if (r.history.size() == 1) {
    app("insert", [](Version& v, Row& row) {
      v = Version{.exists = true,
                  .time_next = kT0 - kSecond,
                  .image = true,
                  .content = ++row.contents};
    });
    return;
  }
  if (!o_.app_changes || last.Gone()) {
    if (o_.app_changes && last.exists) {
      app("purge", [](Version& v, Row&) { v.exists = false; });
    }
    return;
  }
  app("update", [](Version& v, Row& row) {
    v.content = ++row.contents;
    v.priority = v.content;
    v.time_next = kT0 - kSecond - v.content * kMilli;
    v.image = true;
  });
  app("sqlack", [](Version& v, Row&) {
    v.acked = true;
    v.newly_acked = true;
  });
  app("delete", [](Version& v, Row&) { v.exists = false; });
}

void Explorer::ManagerEvents(const World& w, int depth, const std::string& id) {
  const Row& r = w.rows.at(id);
  if (r.queued.has_value()) {
    Step(w, depth, "send(" + id + ")", [id](World& n) {
      Row& row = n.rows[id];
      Copy copy = *std::move(row.queued);
      row.queued.reset();
      copy.m.sent_at = n.Now();
      n.rec.Sent(id, copy.m.epoch, n.Mono());
      row.delivery = Delivery{copy, ++row.sends};
    });
  }
  if (r.delivery.has_value()) {
    Step(w, depth, "handback(" + id + ")",
         [this, id](World& n) { HandBack(n, id); });
  }
  if (r.acks == 0) {
    Step(w, depth, "ack(" + id + ")", [id](World& n) {
      Row& row = n.rows[id];
      n.acks.push_back(OpenAck{id, n.rec.BeginAck({id})});
      n.rec.AcksWriting({id});
      row.queued.reset();  // never sent again while acked
      ++row.acks;
    });
  }
  if (o_.nacks && r.delivery.has_value() && r.holds == 0) {
    Step(w, depth, "nack(" + id + ")", [id](World& n) {
      Row& row = n.rows[id];
      n.holds.push_back(
          OpenHold{id, n.rec.BeginHold({id}), row.delivery->copy.m.epoch});
      ++row.holds;
    });
  }
}

void Explorer::HandBack(World& n, const std::string& id) {
  Row& row = n.rows[id];
  const Delivery d = *std::move(row.delivery);
  row.delivery.reset();
  row.left_during_read |= n.read.has_value();
  if (!n.rec.HandBack(d.copy.m, n.Now(), kAckWait)) return;
  const bool expired = n.Now() >= d.copy.m.sent_at + kAckWait;
  if (expired || row.acks > 0 || row.holds > 0) {
    Fail(absl::StrCat("hand-back of ", id, " queued while ",
                      expired ? "past its ack wait" : "a write of it runs"));
  }
  const int why = Stale(row, d.copy);
  if (why == 9 && !d.copy.d7) {
    Fail(absl::StrCat("hand-back of ", id, " queued stale"));
  }
  if (why == 1) {
    Fail(absl::StrCat("hand-back of ", id, " queued after its ack committed"));
  }
  if (why == 2) ++counts_.deviations[2];
  ++counts_.handbacks_queued;
  row.handed_back = true;
  if (!row.queued.has_value()) row.queued = d.copy;
}

void Explorer::BinlogEvent(World& n) {
  const auto [id, j] = n.binlog.front();
  n.binlog.pop_front();
  Row& row = n.rows[id];
  Version& v = row.history[j];
  const bool in_flight = n.rec.InFlight(id);
  RowChange change = ChangeOf(id, v, row.history[j - 1]);
  if (!o_.gtids) change.gtid.clear();
  const RowReconciler::BinlogVerdict verdict = n.rec.OnBinlogChange(
      change, n.Now(), /*reading=*/true, /*subscribed=*/true);
  row.delivered = j;
  if (v.newly_acked) {
    if (verdict.acked_by_sql != !v.own) {
      // D4: only while msgq's own ack of the id is being written (a
      // committed one is known by its GTID).
      if (!v.own && row.acks > 0) {
        ++counts_.deviations[4];
      } else if (!v.own && !o_.gtids) {
        // D8: without GTIDs, an application's ack shown after msgq's ack
        // of the id committed (changing nothing) is taken for its echo.
        ++counts_.deviations[8];
      } else {
        Fail(absl::StrCat("binlog ack of ", id, ": acked_by_sql ",
                          verdict.acked_by_sql));
      }
    }
  }
  row.handed_back = false;
  if (verdict.action == Action::kOwn && !v.own) {
    if (!in_flight) Fail(absl::StrCat("app change of ", id, " taken as own"));
    v.ignored = true;
    if (row.queued.has_value()) ++counts_.deviations[2];
  }
  n.deferred.erase(id);  // a later change replaces a deferred image
  switch (verdict.action) {
    case Action::kOwn:
    case Action::kNotReading:
      return;
    case Action::kDueImage:
      row.queued.reset();
      Image(n, id, j);
      return;
    case Action::kDueDeferred:
      if (!n.read.has_value()) Fail(absl::StrCat(id, " deferred, no read"));
      row.queued.reset();
      n.deferred[id] = j;
      return;
    default:
      row.queued.reset();
      return;
  }
}

void Explorer::Image(World& n, const std::string& id, int j) {
  Row& row = n.rows[id];
  if (!n.rec.MayQueue(id)) return;
  n.rec.Queued(id);
  const Copy copy{MessageOf(id, row.history[j]), j, row.history[j].content};
  if (Outstanding(row) || Writing(n, id)) {
    Fail(absl::StrCat("image of ", id, " queued while msgq holds it"));
  }
  if (row.read_queued >= j) {
    Fail(absl::StrCat("image of ", id, " queued after a read queued it"));
  }
  bool own_after = false;
  for (size_t k = j + 1; k < row.history.size(); ++k) {
    own_after |= row.history[k].own;
  }
  if (Stale(row, copy) == 9) {
    Fail(absl::StrCat("image of ", id, " queued stale"));
  } else if (own_after) {
    Fail(absl::StrCat("image of ", id, " queued older than msgq's write"));
  }
  ++counts_.images_queued;
  row.queued = copy;
}

void Explorer::ReadEvents(const World& w, int depth) {
  if (!w.read.has_value()) {
    Step(w, depth, "read", [](World& n) {
      // R: every transaction before the first one not visible yet.
      int64_t at = n.gtids;
      for (const auto& [id, r] : n.rows) {
        if (r.pending_visible) at = std::min(at, r.history.back().gtid - 1);
      }
      std::map<std::string, int> snapshot;
      for (auto& [id, r] : n.rows) {
        r.left_during_read = false;
        r.shown_at_read = r.delivered;
        int j = r.Visible();
        while (j > 0 && r.history[j].gtid > at) --j;
        if (Due(r.history[j], n.Now())) snapshot[id] = j;
      }
      n.read = snapshot;
      n.read_at = at;
      n.read_number = n.rec.ReadStarts();
    });
    return;
  }
  Step(w, depth, "readend", [this](World& n) { ReadEnd(n); });
}

void Explorer::ReadEnd(World& n) {
  const std::map<std::string, int> snapshot = *std::move(n.read);
  n.read.reset();
  std::vector<Message> rows;
  for (const auto& [id, j] : snapshot) {
    rows.push_back(MessageOf(id, n.rows[id].history[j]));
  }
  const RowReconciler::Deferred deferred = n.rec.ReadEnds(
      n.read_number, &rows,
      o_.read_positions ? PositionOf(n.read_at) : BinlogPosition{});
  std::map<std::string, bool> kept;
  for (const Message& m : rows) kept[m.id] = n.rec.MayQueue(m.id);
  for (const auto& [id, j] : snapshot) {
    Row& row = n.rows[id];
    const bool queued = kept.count(id) > 0 && kept[id];
    const Copy copy{MessageOf(id, row.history[j]), j, row.history[j].content};
    bool own_after = false;
    for (size_t k = j + 1; k < row.history.size(); ++k) {
      own_after |= row.history[k].own;
    }
    // Rule 3 by position: no change the binlog showed after the snapshot,
    // msgq's own or taken for it (D2) included, lets a read be queued.
    const bool unsafe = Outstanding(row) || Writing(n, id) || own_after ||
                        Stale(row, copy) != 0;
    // Without a position, a row the binlog changed while the read ran is
    // dropped (the change's own action reads or queues it).
    const bool quiet =
        !unsafe && !row.left_during_read &&
        row.delivered + 1 == static_cast<int>(row.history.size()) &&
        !row.pending_visible && !n.rec.InFlight(id) &&
        (o_.read_positions || row.delivered == row.shown_at_read);
    // D7: without a position, a read that started after the binlog showed
    // a change not yet visible to it.
    const bool d7 = !o_.read_positions && j < row.shown_at_read &&
                    !Outstanding(row) && !Writing(n, id);
    Copy kept = copy;
    if (queued && unsafe && d7) {
      ++counts_.deviations[7];
      kept.d7 = true;
    } else if (queued && unsafe) {
      Fail(absl::StrCat("read of ", id, " queued stale"));
    }
    if (!queued && quiet) Fail(absl::StrCat("read of ", id, " not queued"));
    if (!queued) continue;
    n.rec.Queued(id);
    ++counts_.reads_queued;
    row.read_queued = std::max(row.read_queued, j);
    if (!row.queued.has_value()) row.queued = kept;
  }
  // Rule 6: the images that came while the read ran. Each is queued
  // (checked as any image) or read again.
  std::map<std::string, int> waiting = std::move(n.deferred);
  n.deferred.clear();
  size_t decided = 0;
  for (const RowChange& c : deferred.images) {
    if (waiting.count(c.id) == 0) Fail(c.id + " decided, not deferred");
    const long before = counts_.images_queued;
    n.rows[c.id].queued.reset();
    Image(n, c.id, waiting[c.id]);
    counts_.deferred_queued += counts_.images_queued - before;
    ++decided;
  }
  for (const std::string& id : deferred.read) {
    if (waiting.count(id) == 0) Fail(id + " read again, not deferred");
    n.rows[id].queued.reset();
    ++decided;
  }
  // The others the read returned as new as the image.
  for (const auto& [id, j] : waiting) {
    if (decided == waiting.size()) break;
    auto it = snapshot.find(id);
    const bool in_read = it != snapshot.end() && it->second >= j;
    bool named = in_read;
    for (const RowChange& c : deferred.images) named |= c.id == id;
    for (const std::string& r : deferred.read) named |= r == id;
    if (!named) Fail(absl::StrCat("deferred image of ", id, " not decided"));
  }
}

void Explorer::RoundEvents(const World& w, int depth) {
  if (!w.round.has_value()) {
    bool holds = false;
    for (const OpenHold& h : w.holds) holds |= !h.taken;
    if (!w.rec.HasOwed() && !holds) return;
    Step(w, depth, "take", [](World& n) {
      Round round;
      round.taken = n.rec.TakePostpones(absl::InfiniteFuture());
      for (const auto& [id, epoch] : round.taken) {
        round.written.push_back(
            Postponement{id, kT0 + 2 * kSecond + (++n.writes) * kMilli});
        round.sends[id] = n.rows[id].sends;
      }
      for (size_t i = 0; i < n.holds.size(); ++i) {
        if (n.holds[i].taken) continue;
        n.holds[i].taken = true;
        round.holds.push_back(i);
        round.sends.try_emplace(n.holds[i].id, -1);
        n.holds[i].time_next =
            kT0 + 2 * kSecond + 500 * kMilli + (++n.writes) * kMilli;
      }
      n.round = std::move(round);
    });
    return;
  }
  if (!w.round->committed) {
    bool locked = false;
    for (const auto& [id, send] : w.round->sends) {
      locked |= w.rows.at(id).pending_visible;
    }
    if (!locked) {
      Step(w, depth, "commit", [this](World& n) { CommitRound(n); });
    }
    for (Outcome o : {Outcome::kTransient, Outcome::kPermanent}) {
      Step(w, depth, absl::StrCat("fail", static_cast<int>(o)),
           [this, o](World& n) { EndRound(n, o); });
    }
    return;
  }
  Step(w, depth, "done",
       [this](World& n) { EndRound(n, Outcome::kCommitted); });
}

void Explorer::EndRound(World& n, Outcome o) {
  Round round = *std::move(n.round);
  n.round.reset();
  const std::optional<std::string> gtid =
      o == Outcome::kCommitted && o_.gtids
          ? std::optional<std::string>(GtidText(round.gtid))
          : std::nullopt;
  n.rec.PostponesDone(round.taken, round.written, o, gtid);
  for (const auto& [id, j] : round.made) Report(n, id, j);
  for (const auto& [id, send] : round.sends) {
    Row& row = n.rows[id];
    Report(n, id, -1);
    // A postpone taken after the latest send covers it; a permanent
    // failure leaves the row due for the next poll (documented).
    if (o != Outcome::kTransient && row.delivery.has_value() &&
        row.delivery->send == send) {
      row.delivery->settled = true;
    }
  }
  // Holds, newest first, so the indexes stay valid.
  for (auto it = round.holds.rbegin(); it != round.holds.rend(); ++it) {
    const OpenHold h = n.holds[*it];
    n.holds.erase(n.holds.begin() + static_cast<long>(*it));
    n.rec.HoldDone(h.ticket, o, {Postponement{h.id, h.time_next}}, gtid);
    --n.rows[h.id].holds;
  }
}

void Explorer::AckEvents(const World& w, int depth) {
  for (size_t i = 0; i < w.acks.size(); ++i) {
    const OpenAck& a = w.acks[i];
    if (!a.committed && !w.rows.at(a.id).pending_visible) {
      Step(w, depth, "ackcommit(" + a.id + ")", [i](World& n) {
        OpenAck& ack = n.acks[i];
        ack.committed = true;
        Version v = Own(n, ack.id);
        if (!v.exists || v.acked) return;
        v.acked = true;
        v.newly_acked = true;
        ack.made = Commit(n, ack.id, v);
        ack.gtid = n.rows[ack.id].history[ack.made].gtid;
        Row& row = n.rows[ack.id];
        if (row.delivery.has_value()) row.delivery->settled = true;
      });
    }
    const Outcome o = a.committed ? Outcome::kCommitted : Outcome::kTransient;
    Step(w, depth, "ackdone(" + a.id + ")", [this, i, o](World& n) {
      const OpenAck ack = n.acks[i];
      n.acks.erase(n.acks.begin() + static_cast<long>(i));
      n.rec.SettleDone(ack.ticket, o,
                       o == Outcome::kCommitted && o_.gtids
                           ? std::optional<std::string>(GtidText(ack.gtid))
                           : std::nullopt);
      Row& row = n.rows[ack.id];
      --row.acks;
      Report(n, ack.id, ack.made);
    });
  }
}

void Explorer::Visit(const World& w, int depth) {
  if (depth == o_.depth) return;
  for (const std::string& id : o_.ids) {
    AppEvents(w, depth, id);
    ManagerEvents(w, depth, id);
  }
  if (!w.binlog.empty()) {
    Step(w, depth, "binlog", [this](World& n) { BinlogEvent(n); });
  }
  ReadEvents(w, depth);
  RoundEvents(w, depth);
  AckEvents(w, depth);
  if (o_.clear) {
    bool queued = false;
    for (const auto& [id, r] : w.rows) queued |= r.queued.has_value();
    if (queued) {
      Step(w, depth, "clear", [](World& n) {
        for (auto& [id, r] : n.rows) r.queued.reset();
        n.rec.ImagesWait();  // as a change of ownership does
      });
    }
  }
  if (o_.later && !w.later) {
    Step(w, depth, "later", [](World& n) { n.later = true; });
  }
}

}  // namespace msgq::reconciler_test
