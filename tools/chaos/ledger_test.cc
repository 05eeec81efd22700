// The campaign's verdicts, one by one: each violation the Ledger must catch,
// and how it counts and attributes duplicates.
#include "tools/chaos/ledger.h"

#include <ostream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::chaos {

// Failure messages show the split, not its bytes.
void PrintTo(const Report::EpochSplit& s, std::ostream* os) {
  *os << "{same " << s.same << ", later " << s.later << ", earlier "
      << s.earlier << ", unknown " << s.unknown << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr int64_t kS = 1'000'000'000;  // one second in ns
constexpr int64_t kAckWait = 2 * kS;
using Split = Report::EpochSplit;

std::unordered_map<int64_t, TableRow> Table(
    std::initializer_list<std::pair<int64_t, bool>> rows) {
  std::unordered_map<int64_t, TableRow> t;
  for (const auto& [id, acked] : rows) t[id].acked = acked;
  return t;
}

TEST(LedgerTest, CleanRunHasNoViolation) {
  Ledger l;
  l.Produced({1, 2}, {0, 50 * kS}, Outcome::kCommitted);
  l.Produced({3}, {0}, Outcome::kNotCommitted);
  l.Delivered({1}, {0}, 10 * kS, 0);
  l.Delivered({2}, {0}, 50 * kS, 1);  // exactly at time_next
  l.Acked({1, 2}, 51 * kS);
  Report r = l.Verify(Table({{1, true}, {2, true}}), kAckWait, 0);
  EXPECT_THAT(r.violations, IsEmpty());
  EXPECT_EQ(r.committed, 2);
  EXPECT_EQ(r.not_committed, 1);
  EXPECT_EQ(r.scheduled, 1);
  EXPECT_EQ(r.deliveries, 2);
  EXPECT_EQ(r.duplicates, 0);
}

TEST(LedgerTest, EachViolationIsCaught) {
  Ledger l;
  l.Produced({1}, {0}, Outcome::kCommitted);  // lost
  l.Produced({2}, {0}, Outcome::kCommitted);  // never delivered
  l.Produced({3}, {0}, Outcome::kCommitted);  // never acked
  l.Delivered({3}, {0}, 1 * kS, 0);
  l.Produced({4}, {0}, Outcome::kNotCommitted);  // delivered anyway
  l.Delivered({4}, {0}, 1 * kS, 0);
  l.Produced({5}, {0}, Outcome::kNotCommitted);    // in the table anyway
  l.Produced({6}, {9 * kS}, Outcome::kCommitted);  // 5 ms early
  l.Delivered({6}, {0}, 9 * kS - 5'000'000, 0);
  l.Delivered({7}, {0}, 1 * kS, 0);  // never produced
  Report r = l.Verify(
      Table({{2, true}, {3, false}, {5, false}, {6, true}, {8, false}}),
      kAckWait, 1'000'000);
  EXPECT_EQ(r.violation_count, 9);
  EXPECT_THAT(
      r.violations,
      ElementsAre("committed id 1 lost: not in the table",
                  "committed id 1 never delivered",
                  "committed id 2 never delivered",
                  "committed id 3 not acked in the table",
                  "rolled-back id 4 delivered 1 time(s)",
                  "rolled-back id 5 is in the table",
                  "scheduled id 6 delivered 5.000 ms before its time_next "
                  "9000000000",
                  "id 7 delivered but never produced",
                  "table holds id 8 that no producer wrote"));
  EXPECT_EQ(r.max_early_ns, 5'000'000);
  // Ids 1 (not in the table) and 2 (never delivered); 3 was delivered.
  EXPECT_EQ(r.lost, 2);
}

// Commit to first receipt, for messages due at once whose commit time is
// known; a receipt before COMMIT returned counts 0.
TEST(LedgerTest, CommitToReceiptLatency) {
  Ledger l;
  for (int64_t id = 1; id <= 100; ++id) {
    l.Produced({id}, {0}, Outcome::kCommitted, 10 * kS);
    l.Delivered({id}, {0}, 10 * kS + id * 1'000'000, 0);  // id ms
    l.Delivered({id}, {1}, 20 * kS, 1);                   // a later duplicate
  }
  l.Produced({101}, {0}, Outcome::kCommitted, 10 * kS);  // before COMMIT
  l.Delivered({101}, {0}, 10 * kS - 1'000'000, 0);
  l.Produced({102}, {0}, Outcome::kCommitted);  // commit time unknown
  l.Delivered({102}, {0}, 30 * kS, 0);
  l.Produced({103}, {15 * kS}, Outcome::kCommitted, 10 * kS);  // scheduled
  l.Delivered({103}, {0}, 15 * kS, 0);
  std::unordered_map<int64_t, TableRow> table;
  for (int64_t id = 1; id <= 103; ++id) table[id].acked = true;
  Report r = l.Verify(table, kAckWait, 0);
  EXPECT_EQ(r.lost, 0);
  EXPECT_EQ(r.latency_count, 101);
  EXPECT_DOUBLE_EQ(r.latency_p50_ms, 50);
  EXPECT_DOUBLE_EQ(r.latency_p99_ms, 99);
  EXPECT_DOUBLE_EQ(r.latency_max_ms, 100);
}

TEST(LedgerTest, UnknownCommitsAreDecidedByTheTable) {
  Ledger l;
  l.Produced({1, 2}, {0, 0}, Outcome::kUnknown);
  l.Produced({3}, {0}, Outcome::kUnknown);
  l.Delivered({1, 2}, {0, 0}, kS, 0);
  l.Acked({1, 2}, kS);
  Report r = l.Verify(Table({{1, true}, {2, true}}), kAckWait, 0);
  EXPECT_THAT(r.violations, IsEmpty());
  EXPECT_EQ(r.unknown_present, 2);
  EXPECT_EQ(r.unknown_absent, 1);
}

TEST(LedgerTest, DuplicatesInsideTheAckWaitAreAttributedToAFault) {
  Ledger l;
  l.Produced({1, 2, 3, 4}, {0, 0, 0, 0}, Outcome::kCommitted);
  l.Fault(FaultKind::kSigstop, 10 * kS, 11 * kS);
  l.Fault(FaultKind::kMsgqdKill, 10 * kS, 10 * kS + 500'000'000);
  l.Delivered({1}, {0}, 9 * kS, 0);  // 1: again 2.5 s later: outside
  l.Delivered({1}, {1}, 11 * kS + 500'000'000, 1);
  l.Delivered({2}, {0}, 9 * kS, 0);  // 2: across the kill (and the stop)
  l.Delivered({2}, {0}, 10 * kS + 600'000'000, 1);
  l.Delivered({3}, {0}, 20 * kS, 0);  // 3: no fault between
  l.Delivered({3}, {0}, 21 * kS, 2);
  l.Delivered({4}, {0}, 1 * kS, 0);  // 4: delivered again after its ack
  l.Acked({4}, 2 * kS);
  l.Delivered({4}, {1}, 5 * kS, 0);
  Report r = l.Verify(Table({{1, true}, {2, true}, {3, true}, {4, true}}),
                      kAckWait, 0);
  EXPECT_THAT(r.violations, IsEmpty());
  EXPECT_EQ(r.deliveries, 8);
  EXPECT_EQ(r.duplicates, 4);
  EXPECT_EQ(r.inside_ack_wait, 2);
  EXPECT_THAT(r.inside_by_fault,
              ElementsAre(Pair("msgqd_kill", Split{.same = 1}),
                          Pair("none", Split{.same = 1})));
  EXPECT_THAT(r.faults, ElementsAre(Pair("msgqd_kill", 1), Pair("sigstop", 1)));
  EXPECT_EQ(r.same_epoch_before_kill_ns, 1 * kS);
  EXPECT_THAT(r.suspicious,
              ElementsAre("id 3 received at 20000000000 and again 1.000 s "
                          "later"));
  EXPECT_EQ(r.after_ack_ok, 1);
}

// A redelivery inside the ack wait with the epoch of the delivery before it
// is a send whose postpone had not committed (allowed); one with another
// epoch was sent although a postpone had committed: a violation, whatever
// the fault between.
TEST(LedgerTest, DuplicatesInsideTheAckWaitAreClassifiedByEpoch) {
  Ledger l;
  l.Produced({1, 2, 3, 4, 5, 6}, {0, 0, 0, 0, 0, 0}, Outcome::kCommitted);
  l.Fault(FaultKind::kMsgqdKill, 10 * kS, 10 * kS + 500'000'000);
  l.Fault(FaultKind::kMsgqdKill, 30 * kS, 30 * kS + 500'000'000);
  l.Delivered({1, 2, 3}, {0, 2, 0}, 9 * kS, 0);
  l.Delivered({1}, {0}, 10 * kS + 600'000'000, 1);  // same: allowed
  l.Delivered({2}, {3}, 10 * kS + 700'000'000, 1);  // later: a violation
  l.Delivered({3}, {kUnknownEpoch}, 10 * kS + 700'000'000, 2);  // unknown
  l.Delivered({4}, {1}, 29 * kS, 0);
  l.Delivered({4}, {0}, 30 * kS + 600'000'000, 0);  // earlier: a violation
  l.Delivered({5}, {0}, 40 * kS, 0);
  l.Delivered({5}, {1}, 41 * kS, 1);  // later, no fault between
  l.Delivered({6}, {0}, 50 * kS, 0);
  l.Delivered({6}, {1}, 54 * kS, 1);  // later, after the ack wait: fine
  Report r = l.Verify(
      Table({{1, true}, {2, true}, {3, true}, {4, true}, {5, true}, {6, true}}),
      kAckWait, 0);
  EXPECT_EQ(r.inside_ack_wait, 5);
  EXPECT_EQ(r.inside_by_epoch,
            (Split{.same = 1, .later = 2, .earlier = 1, .unknown = 1}));
  EXPECT_THAT(
      r.inside_by_fault,
      ElementsAre(
          Pair("msgqd_kill",
               Split{.same = 1, .later = 1, .earlier = 1, .unknown = 1}),
          Pair("none", Split{.later = 1})));
  EXPECT_THAT(r.faults, ElementsAre(Pair("msgqd_kill", 2)));
  EXPECT_EQ(r.same_epoch_before_kill_ns, 1 * kS);  // id 1: 9 s, kill at 10 s
  EXPECT_THAT(r.same_epoch_examples,
              ElementsAre("id 1 received with epoch 0 at 9000000000 and "
                          "again 1.600 s later (fault between: msgqd_kill)"));
  EXPECT_EQ(r.violation_count, 3);
  EXPECT_THAT(
      r.violations,
      ElementsAre("id 2 received with epoch 2 at 9000000000 and again with "
                  "epoch 3 1.700 s later, inside the ack wait of a committed "
                  "postpone (fault between: msgqd_kill)",
                  "id 4 received with epoch 1 at 29000000000 and again with "
                  "epoch 0 1.600 s later, inside the ack wait of a committed "
                  "postpone (fault between: msgqd_kill)",
                  "id 5 received with epoch 0 at 40000000000 and again with "
                  "epoch 1 1.000 s later, inside the ack wait of a committed "
                  "postpone (fault between: none)"));
}

}  // namespace
}  // namespace msgq::chaos
