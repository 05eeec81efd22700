// SettlementLedger: examples of each rule, then an exhaustive check of every
// interleaving of its events (up to a depth) against a model of what MySQL
// and the subscribers hold, proving invariant 2 of the architecture: an id
// leaves flight only when no write of msgq's is owed or running for it.
#include "engine/queue/settlement_ledger.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using Outcome = SettlementLedger::Outcome;
using Postpone = SettlementLedger::Postpone;

TEST(SettlementLedgerTest, SendOwesAPostponeUntilItCommits) {
  SettlementLedger l;
  l.Sent("a", 3);
  EXPECT_TRUE(l.InFlight("a"));
  EXPECT_EQ(l.owed(), 1u);
  const std::vector<Postpone> taken = l.TakePostpones();
  EXPECT_THAT(taken, ElementsAre(Postpone{"a", 3}));
  EXPECT_EQ(l.owed(), 0u);
  EXPECT_TRUE(l.InFlight("a"));  // still being written
  EXPECT_THAT(l.PostponesDone(taken, Outcome::kCommitted), ElementsAre("a"));
  EXPECT_FALSE(l.InFlight("a"));
  EXPECT_EQ(l.in_flight(), 0u);
}

TEST(SettlementLedgerTest, PostponesPendingWhileOwedOrBeingWritten) {
  SettlementLedger l;
  EXPECT_FALSE(l.PostponesPending());
  l.Sent("a", 0);
  EXPECT_TRUE(l.PostponesPending());  // owed
  std::vector<Postpone> taken = l.TakePostpones();
  EXPECT_TRUE(l.PostponesPending());  // being written
  l.PostponesDone(taken, Outcome::kTransient);
  EXPECT_TRUE(l.PostponesPending());  // owed again
  taken = l.TakePostpones();
  l.PostponesDone(taken, Outcome::kCommitted);
  EXPECT_FALSE(l.PostponesPending());
  // An ack in flight is not a pending postpone.
  const SettlementLedger::SettleTicket ticket = l.BeginAck({"b"});
  EXPECT_FALSE(l.PostponesPending());
  l.SettleDone(ticket, Outcome::kCommitted);
}

TEST(SettlementLedgerTest, TransientFailureOwesAgainPermanentDoesNot) {
  SettlementLedger l;
  l.Sent("a", 0);
  l.Sent("b", 1);
  std::vector<Postpone> taken = l.TakePostpones();
  EXPECT_THAT(l.PostponesDone(taken, Outcome::kTransient), IsEmpty());
  EXPECT_EQ(l.owed(), 2u);
  taken = l.TakePostpones();
  EXPECT_THAT(taken, UnorderedElementsAre(Postpone{"a", 0}, Postpone{"b", 1}));
  // Permanent: the rows stay due in MySQL and the next poll sends them.
  EXPECT_THAT(l.PostponesDone(taken, Outcome::kPermanent),
              UnorderedElementsAre("a", "b"));
  EXPECT_EQ(l.in_flight(), 0u);
}

TEST(SettlementLedgerTest, AckCancelsTheOwedPostponeAndRestoresItOnFailure) {
  SettlementLedger l;
  l.Sent("a", 2);
  SettlementLedger::SettleTicket ticket = l.BeginAck({"a"});
  EXPECT_THAT(ticket.cancelled, ElementsAre(Postpone{"a", 2}));
  EXPECT_EQ(l.owed(), 0u);
  EXPECT_TRUE(l.Acking("a"));
  EXPECT_THAT(l.SettleDone(ticket, Outcome::kTransient), IsEmpty());
  EXPECT_FALSE(l.Acking("a"));
  EXPECT_THAT(l.TakePostpones(), ElementsAre(Postpone{"a", 2}));
}

TEST(SettlementLedgerTest, HoldKeepsTheOwedPostponeAndTheIdInFlight) {
  SettlementLedger l;
  l.Sent("a", 4);
  SettlementLedger::SettleTicket hold = l.BeginHold({"a"});
  EXPECT_THAT(hold.cancelled, IsEmpty());
  EXPECT_EQ(l.owed(), 1u);  // the send's postpone is written first
  EXPECT_TRUE(l.Acking("a"));
  const std::vector<Postpone> taken = l.TakePostpones();
  EXPECT_THAT(taken, ElementsAre(Postpone{"a", 4}));
  EXPECT_THAT(l.PostponesDone(taken, Outcome::kCommitted), IsEmpty());
  EXPECT_TRUE(l.InFlight("a"));  // the nack still runs
  std::vector<std::string> left;
  EXPECT_FALSE(l.HandBack("a", &left));  // not requeued while it runs
  EXPECT_THAT(l.SettleDone(hold, Outcome::kCommitted), ElementsAre("a"));
  EXPECT_EQ(l.in_flight(), 0u);
}

TEST(SettlementLedgerTest, FailedHoldRestoresNothing) {
  SettlementLedger l;
  SettlementLedger::SettleTicket hold = l.BeginHold({"x"});  // a read row dies
  EXPECT_TRUE(l.InFlight("x"));
  EXPECT_EQ(l.owed(), 0u);
  EXPECT_THAT(l.SettleDone(hold, Outcome::kTransient), ElementsAre("x"));
  EXPECT_EQ(l.owed(), 0u);
  EXPECT_EQ(l.in_flight(), 0u);
}

TEST(SettlementLedgerTest, AckCommittedSettles) {
  SettlementLedger l;
  l.Sent("a", 0);
  SettlementLedger::SettleTicket ticket = l.BeginAck({"a", "unknown"});
  EXPECT_TRUE(l.InFlight("unknown"));  // never queued while its ack runs
  EXPECT_THAT(l.SettleDone(ticket, Outcome::kCommitted),
              UnorderedElementsAre("a", "unknown"));
  EXPECT_EQ(l.in_flight(), 0u);
}

TEST(SettlementLedgerTest, NewerSendWhilePostponeRunsKeepsTheIdInFlight) {
  SettlementLedger l;
  l.Sent("a", 0);
  const std::vector<Postpone> first = l.TakePostpones();
  std::vector<std::string> left;
  EXPECT_TRUE(l.HandBack("a", &left));  // the stream ended before writing
  EXPECT_THAT(left, IsEmpty());         // its postpone still runs
  l.Sent("a", 0);                       // sent again to someone else
  EXPECT_THAT(l.PostponesDone(first, Outcome::kCommitted), IsEmpty());
  EXPECT_TRUE(l.InFlight("a"));
  EXPECT_THAT(l.TakePostpones(), ElementsAre(Postpone{"a", 0}));
}

TEST(SettlementLedgerTest, HandBackDuringAnAckWaitsForTheAck) {
  SettlementLedger l;
  l.Sent("a", 0);
  SettlementLedger::SettleTicket ticket = l.BeginAck({"a"});
  EXPECT_FALSE(l.HandBack("a", nullptr));
  EXPECT_THAT(l.SettleDone(ticket, Outcome::kCommitted), ElementsAre("a"));
}

TEST(SettlementLedgerTest, HandBackOfASettledIdMayBeQueued) {
  SettlementLedger l;
  std::vector<std::string> left;
  EXPECT_TRUE(l.HandBack("a", &left));
  EXPECT_THAT(left, IsEmpty());
  l.Sent("a", 0);
  EXPECT_TRUE(l.HandBack("a", &left));
  EXPECT_THAT(left, ElementsAre("a"));
  EXPECT_EQ(l.owed(), 0u);
}

// ---------------------------------------------------------------------------
// Exhaustive check.
//
// The model follows, per id, the latest send: `unsettled` while it was
// delivered (not handed back) and neither a postpone taken after it nor an
// ack has committed (a permanent failure also ends it: the row stays due
// and is sent again). Rounds and ack tickets that are open are writes MySQL may
// still apply. Checked after every event of every interleaving:
//   safety    unsettled, or in an open round, or in an open ack => in flight
//             (a poll cannot bring back a stale copy, nothing delivered is
//             left due without its postpone);
//   counting  owed() is the number of ids TakePostpones would return, each
//             with the epoch of a send that happened;
//   drain     committing everything open, then the owed postpones, leaves
//             nothing in flight.

struct Round {
  std::vector<Postpone> taken;
  std::map<std::string, int> sends_before;  // latest send at take time
};

struct State {
  SettlementLedger ledger;
  std::map<std::string, int> latest;  // id -> number of its latest send
  std::map<std::string, bool> unsettled;
  std::map<std::string, bool> handed_back;  // the latest send was
  std::map<std::string, bool> requeued;     // ... and HandBack allowed it
  std::map<std::string, bool> acked;        // an ack committed
  std::vector<Round> rounds;                // open
  std::vector<SettlementLedger::SettleTicket> acks;   // open
  std::vector<SettlementLedger::SettleTicket> holds;  // open nacks/extends
};

class Explorer {
 public:
  // `hold`: also explore nacks/extends (BeginHold).
  Explorer(std::vector<std::string> ids, int depth, bool hold = false)
      : ids_(std::move(ids)), depth_(depth), hold_(hold) {}
  void Run() { Visit(State(), 0, "start"); }
  long states() const { return states_; }

 private:
  void Check(const State& s, const std::string& path) {
    ++states_;
    size_t owed = 0;
    for (const std::string& id : ids_) {
      bool pending = s.unsettled.count(id) && s.unsettled.at(id);
      for (const Round& r : s.rounds) {
        for (const Postpone& p : r.taken) pending |= p.first == id;
      }
      for (const auto& t : s.acks) {
        for (const std::string& a : t.ids) pending |= a == id;
      }
      for (const auto& t : s.holds) {
        for (const std::string& a : t.ids) pending |= a == id;
      }
      if (pending && !s.ledger.InFlight(id)) {
        ADD_FAILURE() << "safety: " << id << " left flight: " << path;
        failed_ = true;
      }
    }
    SettlementLedger probe = s.ledger;
    const std::vector<Postpone> taken = probe.TakePostpones();
    owed = taken.size();
    for (const Postpone& p : taken) {
      // A transient failure may owe again an older send's postpone when the
      // newer one was handed back; never a send that did not happen.
      if (!s.latest.count(p.first) || p.second > s.latest.at(p.first)) {
        ADD_FAILURE() << "epoch of " << p.first << " is not a send's: " << path;
        failed_ = true;
      }
    }
    if (owed != s.ledger.owed()) {
      ADD_FAILURE() << "owed() " << s.ledger.owed() << " != " << owed << ": "
                    << path;
      failed_ = true;
    }
    // Drain.
    probe.PostponesDone(taken, Outcome::kCommitted);
    for (const Round& r : s.rounds)
      probe.PostponesDone(r.taken, Outcome::kCommitted);
    for (const auto& t : s.acks) probe.SettleDone(t, Outcome::kCommitted);
    for (const auto& t : s.holds) probe.SettleDone(t, Outcome::kCommitted);
    probe.PostponesDone(probe.TakePostpones(), Outcome::kCommitted);
    if (probe.in_flight() != 0 || probe.owed() != 0) {
      ADD_FAILURE() << "drain left " << probe.in_flight()
                    << " in flight: " << path;
      failed_ = true;
    }
  }

  void Visit(const State& s, int depth, const std::string& path) {
    if (failed_) return;
    Check(s, path);
    if (depth == depth_ || failed_) return;
    for (const std::string& id : ids_) VisitId(s, depth, path, id);
    VisitWrites(s, depth, path);
  }

  // The events of one id: send, hand-back, ack, hold.
  void VisitId(const State& s, int depth, const std::string& path,
               const std::string& id) {
    const bool acked = s.acked.count(id) && s.acked.at(id);
    const bool queueable =
        !s.ledger.InFlight(id) || (s.requeued.count(id) && s.requeued.at(id));
    if (queueable && !acked) {  // a poll or a hand-back queued it: send
      State n = s;
      const int send = ++n.latest[id];
      n.ledger.Sent(id, send);
      n.unsettled[id] = true;
      n.handed_back[id] = false;
      n.requeued[id] = false;
      Visit(n, depth + 1, path + " send(" + id + ")");
    }
    if (s.latest.count(id) && !s.handed_back.at(id)) {
      State n = s;
      n.handed_back[id] = true;  // a send is handed back at most once
      n.requeued[id] = n.ledger.HandBack(id, nullptr);
      // Never delivered: nothing is owed for it (unless an ack runs,
      // whose failure makes the ledger postpone it after all).
      if (n.requeued[id]) n.unsettled[id] = false;
      Visit(n, depth + 1, path + " handback(" + id + ")");
    }
    {
      State n = s;
      n.acks.push_back(n.ledger.BeginAck({id}));
      Visit(n, depth + 1, path + " ack(" + id + ")");
    }
    if (hold_) {
      // A nack or extend: it must leave an owed postpone owed.
      State n = s;
      const size_t owed = n.ledger.owed();
      n.holds.push_back(n.ledger.BeginHold({id}));
      if (n.ledger.owed() != owed) {
        ADD_FAILURE() << "a hold cancelled a postpone: " << path;
        failed_ = true;
      }
      Visit(n, depth + 1, path + " hold(" + id + ")");
    }
  }

  // The writes' events: take, and each round, hold and ack finishing.
  void VisitWrites(const State& s, int depth, const std::string& path) {
    if (s.ledger.HasOwed()) {
      State n = s;
      n.rounds.push_back(Round{n.ledger.TakePostpones(), n.latest});
      Visit(n, depth + 1, path + " take");
    }
    for (size_t i = 0; i < s.rounds.size(); ++i) {
      for (Outcome o :
           {Outcome::kCommitted, Outcome::kTransient, Outcome::kPermanent}) {
        State n = s;
        Round r = n.rounds[i];
        n.rounds.erase(n.rounds.begin() + static_cast<long>(i));
        n.ledger.PostponesDone(r.taken, o);
        if (o != Outcome::kTransient) {
          // Any postpone taken after the latest send moves the row's
          // time_next past now: that send is covered.
          for (const Postpone& p : r.taken) {
            if (r.sends_before[p.first] == n.latest[p.first]) {
              n.unsettled[p.first] = false;
            }
          }
        }
        Visit(n, depth + 1,
              path + " round" + std::to_string(i) + "=" +
                  std::to_string(static_cast<int>(o)));
      }
    }
    for (size_t i = 0; i < s.holds.size(); ++i) {
      for (Outcome o : {Outcome::kCommitted, Outcome::kTransient}) {
        // Either way the send's own postpone is still what covers it.
        State n = s;
        SettlementLedger::SettleTicket t = n.holds[i];
        n.holds.erase(n.holds.begin() + static_cast<long>(i));
        n.ledger.SettleDone(t, o);
        Visit(n, depth + 1,
              path + " holddone" + std::to_string(i) + "=" +
                  std::to_string(static_cast<int>(o)));
      }
    }
    for (size_t i = 0; i < s.acks.size(); ++i) {
      for (Outcome o : {Outcome::kCommitted, Outcome::kTransient}) {
        State n = s;
        SettlementLedger::SettleTicket t = n.acks[i];
        n.acks.erase(n.acks.begin() + static_cast<long>(i));
        n.ledger.SettleDone(t, o);
        if (o == Outcome::kCommitted) {
          for (const std::string& id : t.ids) {
            n.unsettled[id] = false;
            n.acked[id] = true;
          }
        }
        Visit(n, depth + 1,
              path + " ackdone" + std::to_string(i) + "=" +
                  std::to_string(static_cast<int>(o)));
      }
    }
  }

  const std::vector<std::string> ids_;
  const int depth_;
  const bool hold_;
  long states_ = 0;
  bool failed_ = false;
};

TEST(SettlementLedgerTest, EveryInterleavingOfOneIdKeepsTheInvariants) {
  Explorer e({"a"}, 10);
  e.Run();
  EXPECT_GT(e.states(), 100000);
}

TEST(SettlementLedgerTest, EveryInterleavingWithNacksOfOneIdKeepsThem) {
  Explorer e({"a"}, 9, /*hold=*/true);
  e.Run();
  EXPECT_GT(e.states(), 100000);
}

TEST(SettlementLedgerTest, EveryInterleavingWithNacksOfTwoIdsKeepsThem) {
  Explorer e({"a", "b"}, 7, /*hold=*/true);
  e.Run();
  EXPECT_GT(e.states(), 100000);
}

TEST(SettlementLedgerTest, EveryInterleavingOfTwoIdsKeepsTheInvariants) {
  Explorer e({"a", "b"}, 8);
  e.Run();
  EXPECT_GT(e.states(), 100000);
}

}  // namespace
}  // namespace msgq
