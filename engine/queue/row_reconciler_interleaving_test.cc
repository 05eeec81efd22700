// RowReconciler: every order of the events that race on a few rows, to a
// depth, checked against a model of the truth: what each row is in MySQL
// after each event, and what the manager could know of it. The world and
// the manager as the test plays it are in row_reconciler_model.h, the
// events in row_reconciler_explorer.cc.
//
// What is checked, after each event:
//   read      a row a read returned is queued only if it is not stale: no
//             subscriber holds an unsettled send of it, no write of msgq's
//             on it runs, no write of msgq's committed after the read's
//             snapshot, and the binlog showed no change of it after the
//             snapshot (one shown before the read started but not yet
//             visible to it included; an application's change taken for
//             msgq's own while in flight included); and a quiet row
//             (nothing of msgq's pending or in the binlog, the read as new
//             as the row) is queued;
//   hand-back a handed-back message is queued again only within its ack
//             wait, with no ack or nack of it running, and when nothing the
//             manager knows (the binlog, msgq's reported writes, among them
//             its own ack that committed before the binlog showed it)
//             changed or removed the row since the copy was read;
//   image     a row image is queued only under the read rule (no write of
//             msgq's committed after the image's commit, even one reported
//             before the binlog showed the image: postpones, nacks and acks,
//             told by their GTIDs), and when no read queued
//             the row as new as the image; one that came while a read ran
//             is decided when the read ends, queued under the same checks
//             or read again;
//   binlog    an ack the binlog shows is acked_by_sql exactly when an
//             application wrote it (a failed ack of an id does not forget
//             an earlier committed ack of it);
//   cache     nothing queued is held unsettled by a subscriber or known to
//             be stale.
// Known deviations of the rules are not failures; each is recognised
// exactly and counted, and has an example whose DISABLED_ test states what
// the exact behaviour would be:
//   D2  an application's change of a row in flight is taken for msgq's own
//       write: a hand-back (or a copy queued meanwhile) keeps the row as
//       it was sent (a read from before the change is dropped by rule 3);
//   D4  an application's ack is not counted as acked_by_sql when the
//       binlog shows it while msgq's ack of the same id is being written
//       (a committed ack of msgq's is known by its GTID: once its result
//       is in, the application's ack is counted);
//   D7  without read positions (MySQL), a read that started after the
//       binlog showed a change not yet visible to it is queued with the
//       row from before the change (rule 3's fallback sees only changes
//       shown while the read ran; the copy may then be sent and handed
//       back);
//   D8  without GTIDs, an application's ack shown after msgq's ack of the
//       id committed (and changed nothing) is taken for msgq's echo, not
//       counted as acked_by_sql (rule 5 matches acks by id there).
// D1, D3, D5 and D6 are failures, not deviations (their examples in
// row_reconciler_deviations_test.cc run): D1 a hand-back queued again
// after msgq's own ack of it committed, before the binlog showed it (a
// duplicate delivery); D3 a row image queued although a write of msgq's
// committed after it and was reported before the binlog showed it (the
// row sent again inside its ack wait); D5 a read from before a change
// queued because a hand-back of the changed row came between; D6 a failed
// ack forgetting an earlier committed ack of the id (its echo counted as
// acked_by_sql).
// The examples are in row_reconciler_deviations_test.cc.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/queue/row_reconciler_model.h"
#include "gtest/gtest.h"

namespace msgq::reconciler_test {
namespace {

Counts Explore(Explorer::Options options, long min_states) {
  const bool positions = options.read_positions;
  Explorer e(std::move(options));
  e.Run();
  const Counts& c = e.counts();
  EXPECT_GE(c.states, min_states);
  // Not vacuous: each path that queues a row was taken (without read
  // positions, no image deferred during a read is used).
  EXPECT_GT(c.reads_queued, 0);
  EXPECT_GT(c.handbacks_queued, 0);
  EXPECT_GT(c.images_queued, 0);
  if (positions) {
    EXPECT_GT(c.deferred_queued, 0);
  }
  // For the curious (gtest's XML output): how many of each were met.
  ::testing::Test::RecordProperty("states", std::to_string(c.states));
  for (int d : {2, 4, 7, 8}) {
    ::testing::Test::RecordProperty(absl::StrCat("D", d),
                                    std::to_string(c.deviations[d]));
  }
  return c;
}

// Sanitized builds run the explorer a hundred times slower (ASan: over 6
// minutes at depth 9), so they search two events less deep.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Every event on one row, to 9 events: 1.67 million orders.
TEST(RowReconcilerInterleavingTest, EveryOrderOfEventsOnOneRow) {
  Explore({.ids = {"a"}, .depth = kSanitized ? 7 : 9},
          kSanitized ? 10'000 : 1'000'000);
}

// Two rows, to 7 events: 0.95 million orders (a read returns both; ids
// leaving flight during it are told apart).
TEST(RowReconcilerInterleavingTest, EveryOrderOfEventsOnTwoRows) {
  Explore({.ids = {"a", "b"}, .depth = 7}, 500'000);
}

// One row, to 10 events, without the clock passing the ack wait or the
// cache being emptied: 2.9 million orders. The tenth event reaches an
// UPDATE committed before msgq's postpone of the row and shown after it
// (rule 7; an INSERT, its visibility, the UPDATE's, the send, the round
// and the two binlog events take ten).
TEST(RowReconcilerInterleavingTest, EveryOrderOfTenEventsOnOneRowBeforeLater) {
  Explore({.ids = {"a"},
           .depth = kSanitized ? 8 : 10,
           .later = false,
           .clear = false},
          kSanitized ? 10'000 : 2'500'000);
}

// One row, to 9 events, on a server that names no GTIDs: rules 5 and 7
// match msgq's writes by id and time_next. D8 is met.
TEST(RowReconcilerInterleavingTest, EveryOrderOfEventsOnOneRowWithoutGtids) {
  const Counts c =
      Explore({.ids = {"a"}, .depth = kSanitized ? 7 : 9, .gtids = false},
              kSanitized ? 10'000 : 1'000'000);
  // The sanitized builds' shallower search does not reach D8.
  if (!kSanitized) EXPECT_GT(c.deviations[8], 0);
}

// One row, to 9 events, with reads that report no position: rule 3 drops
// rows changed while the read ran, and rule 6 stops images after a read.
// D7 is met (and only D7 lets a stale read through).
TEST(RowReconcilerInterleavingTest,
     EveryOrderOfEventsOnOneRowWithoutPositions) {
  const Counts c = Explore(
      {.ids = {"a"}, .depth = kSanitized ? 7 : 9, .read_positions = false},
      kSanitized ? 10'000 : 1'000'000);
  EXPECT_GT(c.deviations[7], 0);
}

}  // namespace
}  // namespace msgq::reconciler_test
