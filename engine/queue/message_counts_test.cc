#include "engine/queue/message_counts.h"

#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

RowChange Insert(std::optional<int64_t> time_next, bool sent = false) {
  RowChange c;
  c.inserted = true;
  c.time_next = time_next;
  c.sent = sent;
  return c;
}

RowChange Update(std::optional<int64_t> before, bool sent_before,
                 std::optional<int64_t> after, bool sent,
                 std::optional<int64_t> acked = std::nullopt) {
  RowChange c;
  c.has_before = true;
  c.time_next_before = before;
  c.sent_before = sent_before;
  c.time_next = after;
  c.sent = sent;
  c.time_acked = acked;
  return c;
}

MessageCounts::Counts Loaded(MessageCounts& counts,
                             MessageCounts::Snapshot snapshot, int64_t now) {
  EXPECT_TRUE(counts.Install(counts.BeginRead(), std::move(snapshot)).ok());
  return *counts.Get(now);
}

TEST(MessageCountsTest, NothingBeforeTheFirstInstall) {
  MessageCounts counts;
  counts.Apply({Insert(0)});
  EXPECT_FALSE(counts.Get(100).has_value());
  EXPECT_FALSE(counts.loaded());
}

TEST(MessageCountsTest, ChangesMoveRowsBetweenStates) {
  MessageCounts counts;
  MessageCounts::Counts c = Loaded(counts, {{{0, 2}, {500, 1}}, {}, 1}, 100);
  EXPECT_EQ(c.ready, 2);
  EXPECT_EQ(c.scheduled, 1);
  EXPECT_EQ(c.in_flight, 0);
  EXPECT_EQ(c.dead, 1);
  EXPECT_FALSE(c.oldest_due_ns.has_value());  // time_next 0 has no age
  counts.Apply({
      Update(0, false, 300, true),                 // sent: in flight
      Update(0, false, std::nullopt, false),       // died
      Update(std::nullopt, false, 50, false),      // redriven: ready
      Update(500, false, 500, false, int64_t{9}),  // acked by SQL
  });
  c = *counts.Get(100);
  EXPECT_EQ(c.ready, 1);
  EXPECT_EQ(c.scheduled, 0);
  EXPECT_EQ(c.in_flight, 1);
  EXPECT_EQ(c.dead, 1);
  EXPECT_EQ(c.oldest_due_ns, 50);
  // The ack wait runs out: ready again.
  c = *counts.Get(300);
  EXPECT_EQ(c.ready, 2);
  EXPECT_EQ(c.in_flight, 0);
  RowChange deleted;
  deleted.deleted = true;
  deleted.time_next = 300;
  deleted.sent = true;
  counts.Apply({deleted});
  c = *counts.Get(300);
  EXPECT_EQ(c.ready, 1);
  EXPECT_FALSE(counts.stale());
  EXPECT_EQ(c.corrections, 0);
}

TEST(MessageCountsTest, UnknownBeforeStateOrUnderflowMarksStale) {
  MessageCounts counts;
  Loaded(counts, {{{0, 1}}, {}, 0}, 100);
  RowChange minimal;  // an update without its before image's columns
  minimal.time_next = 0;
  counts.Apply({minimal});
  EXPECT_TRUE(counts.stale());
  Loaded(counts, {{{0, 1}}, {}, 0}, 100);
  EXPECT_FALSE(counts.stale());
  counts.Apply({Update(std::nullopt, false, 0, false)});  // no dead row
  EXPECT_TRUE(counts.stale());
  EXPECT_EQ(counts.Get(100)->dead, 0);
}

TEST(MessageCountsTest, InstallRefusesAReadThatChangesRacedAndCountsFixes) {
  MessageCounts counts;
  Loaded(counts, {{{0, 1}}, {}, 0}, 100);
  const uint64_t token = counts.BeginRead();
  counts.Apply({Insert(0)});
  EXPECT_EQ(counts.Install(token, {{{0, 2}}, {}, 0}).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(counts.Get(100)->ready, 2);
  // Same as kept: no correction; different: one.
  MessageCounts::Counts c = Loaded(counts, {{{0, 2}}, {}, 0}, 100);
  EXPECT_EQ(c.corrections, 0);
  c = Loaded(counts, {{{0, 3}}, {}, 0}, 100);
  EXPECT_EQ(c.corrections, 1);
  EXPECT_EQ(c.ready, 3);
}

RowChange WithGtid(RowChange c, std::string gtid) {
  c.gtid = std::move(gtid);
  return c;
}

TEST(MessageCountsTest, AReadAtAPositionKeepsTheChangesAfterIt) {
  MessageCounts counts;
  Loaded(counts, {{{0, 1}}, {}, 0}, 100);
  const uint64_t token = counts.BeginRead();
  // 0-1-5 is in the read, 0-1-6 is not.
  counts.Apply({WithGtid(Insert(0), "0-1-5"), WithGtid(Insert(0), "0-1-6")});
  ASSERT_TRUE(counts
                  .Install(token, {{{0, 2}}, {}, 0},
                           MessageCounts::GtidPosition{{0, 5}})
                  .ok());
  EXPECT_EQ(counts.Get(100)->ready, 3);
  EXPECT_EQ(counts.Get(100)->corrections, 0);
  // The binlog delivers a change the read held only now: not again.
  counts.Apply({WithGtid(Insert(0), "0-1-4"), WithGtid(Insert(0), "0-1-7")});
  EXPECT_EQ(counts.Get(100)->ready, 4);
  // A change without a GTID cannot be placed: the racing read is refused.
  const uint64_t again = counts.BeginRead();
  counts.Apply({Insert(0)});
  EXPECT_EQ(counts
                .Install(again, {{{0, 4}}, {}, 0},
                         MessageCounts::GtidPosition{{0, 7}})
                .code(),
            absl::StatusCode::kAborted);
}

TEST(MessageCountsTest, GtidPositionsParse) {
  EXPECT_EQ(*MessageCounts::ParseGtidPosition("0-1-100,2-3-7"),
            (MessageCounts::GtidPosition{{0, 100}, {2, 7}}));
  EXPECT_EQ(*MessageCounts::ParseGtidPosition(""),
            MessageCounts::GtidPosition{});
  EXPECT_EQ(MessageCounts::ParseGtidPosition("0-1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MessageCountsTest, PastTheBoundNewTimesJoinTheNextKeptOne) {
  MessageCounts counts(MessageCounts::Options{.max_times = 2});
  Loaded(counts, {{{100, 1}, {300, 1}}, {}, 0}, 0);
  counts.Apply({Insert(200), Insert(400)});
  MessageCounts::Counts c = *counts.Get(250);
  EXPECT_EQ(c.ready, 1);      // 200 joined 300: not ready yet
  EXPECT_EQ(c.scheduled, 3);  // totals stay exact
  c = *counts.Get(300);
  EXPECT_EQ(c.ready, 4);  // 400 joined 300, the largest kept
  counts.Apply({Update(200, false, std::nullopt, false)});
  EXPECT_FALSE(counts.stale());
  EXPECT_EQ(counts.Get(300)->ready, 3);
}

TEST(MessageCountsTest, ClockSteppingBackRecounts) {
  MessageCounts counts;
  Loaded(counts, {{{100, 1}, {200, 1}}, {}, 0}, 0);
  EXPECT_EQ(counts.Get(250)->ready, 2);
  EXPECT_EQ(counts.Get(150)->ready, 1);
  EXPECT_EQ(counts.Get(150)->scheduled, 1);
}

}  // namespace
}  // namespace msgq
