// RowReconciler: one example per rule of row_reconciler.h. Every order of
// the events is in row_reconciler_interleaving_test.cc.
#include "engine/queue/row_reconciler.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Action = RowReconciler::BinlogAction;
using Outcome = RowReconciler::Outcome;

constexpr int64_t kNow = 1'700'000'000 * kSecond;
const absl::Time kMono = absl::FromUnixSeconds(5000);

Message Row(const std::string& id, int64_t priority = 0,
            int64_t time_next = kNow - kSecond) {
  Message m;
  m.id = id;
  m.priority = priority;
  m.time_next = time_next;
  return m;
}

// Offset `offset` of the binlog's one file.
BinlogPosition At(uint64_t offset) { return {"binlog.000001", offset}; }

// An unacked row the binlog showed, with a row image.
RowChange Change(const std::string& id, int64_t priority = 0,
                 int64_t time_next = kNow - kSecond, uint64_t offset = 100) {
  RowChange c;
  c.position = At(offset);
  c.id = id;
  c.priority = priority;
  c.time_next = time_next;
  c.row = std::make_shared<PackedRow>();
  return c;
}

RowChange Acked(const std::string& id) {
  RowChange c;
  c.id = id;
  c.time_acked = kNow;
  c.newly_acked = true;
  return c;
}

std::vector<std::string> Ids(const std::vector<Message>& rows) {
  std::vector<std::string> ids;
  for (const Message& m : rows) ids.push_back(m.id);
  return ids;
}

// Reads `rows` in one read at `at` with nothing happening meanwhile.
std::vector<std::string> Read(RowReconciler& r, std::vector<Message> rows,
                              const BinlogPosition& at = {}) {
  const uint64_t read = r.ReadStarts();
  r.ReadEnds(read, &rows, at);
  return Ids(rows);
}

Action Verdict(RowReconciler& r, const RowChange& c) {
  return r
      .OnBinlogChange(c, kNow, /*reading=*/true,
                      /*subscribed=*/true)
      .action;
}

// A reconciler whose images may be used at once.
RowReconciler Images() { return RowReconciler(true, /*images_wait=*/false); }

TEST(RowReconcilerTest, AnIdInFlightIsNotQueuedUntilItsPostponeCommits) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_TRUE(r.MayQueue("a"));
  r.Sent("a", 0, kMono);
  EXPECT_FALSE(r.MayQueue("a"));
  const std::vector<RowReconciler::Postpone> taken =
      r.TakePostpones(absl::InfiniteFuture());
  EXPECT_FALSE(r.MayQueue("a"));
  r.PostponesDone(taken, {Postponement{"a", kNow + 30 * kSecond}},
                  Outcome::kCommitted);
  EXPECT_TRUE(r.MayQueue("a"));
  EXPECT_EQ(r.in_flight(), 0u);
}

TEST(RowReconcilerTest, AnIdThatLeftFlightDuringAReadIsDroppedFromIt) {
  RowReconciler r(false, /*images_wait=*/false);
  RowReconciler::Ticket ack = r.BeginAck({"a"});
  r.AcksWriting({"a"});
  // Reads "a" due, from before the ack commits.
  const uint64_t read = r.ReadStarts();
  r.SettleDone(ack, Outcome::kCommitted);
  std::vector<Message> rows = {Row("a"), Row("b")};
  r.ReadEnds(read, &rows);
  EXPECT_THAT(Ids(rows), ElementsAre("b"));
  // A later read starts after the ack committed: what it shows is current.
  EXPECT_THAT(Read(r, {Row("a")}), ElementsAre("a"));
}

TEST(RowReconcilerTest, OverlappingReadsForgetOnlyWhenTheLastEnds) {
  RowReconciler r(false, /*images_wait=*/false);
  RowReconciler::Ticket ack = r.BeginAck({"a"});
  const uint64_t one = r.ReadStarts();
  const uint64_t two = r.ReadStarts();
  r.SettleDone(ack, Outcome::kCommitted);
  std::vector<Message> first = {Row("a")};
  r.ReadEnds(one, &first);
  EXPECT_THAT(first, IsEmpty());
  std::vector<Message> second = {Row("a")};
  r.ReadEnds(two, &second);
  EXPECT_THAT(second, IsEmpty());
  EXPECT_THAT(Read(r, {Row("a")}), ElementsAre("a"));
}

TEST(RowReconcilerTest, AReadOlderThanTheBinlogsLastChangeIsDropped) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_EQ(Verdict(r, Change("a", /*priority=*/2, kNow - kSecond, 100)),
            Action::kDueRead);
  // The binlog ran ahead of the snapshot: a read that started after the
  // change was shown may still be older than it.
  EXPECT_THAT(Read(r, {Row("a", /*priority=*/1), Row("b")}, At(60)),
              ElementsAre("b"));
  EXPECT_THAT(Read(r, {Row("a", /*priority=*/1)}, At(99)), IsEmpty());
  EXPECT_THAT(Read(r, {Row("a", /*priority=*/2)}, At(100)), ElementsAre("a"));
  // Every read from now on is at 100 or later: the change is forgotten
  // (a read at 99 cannot start any more).
  EXPECT_THAT(Read(r, {Row("a", /*priority=*/2)}, At(99)), ElementsAre("a"));
}

TEST(RowReconcilerTest, AReadWithoutAPositionDropsRowsChangedWhileItRan) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 100)), Action::kDueRead);
  const uint64_t read = r.ReadStarts();
  EXPECT_EQ(Verdict(r, Change("b", 0, kNow - kSecond, 200)), Action::kDueRead);
  std::vector<Message> rows = {Row("a"), Row("b"), Row("c")};
  r.ReadEnds(read, &rows);
  EXPECT_THAT(Ids(rows), ElementsAre("a", "c"));
  // Its rows had no position: only changes shown during a read count now.
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 300)), Action::kDueRead);
  EXPECT_THAT(Read(r, {Row("c")}, At(250)), ElementsAre("c"));
}

TEST(RowReconcilerTest, ARowTheBinlogShowedGoneIsNeverReadDueBeforeIt) {
  RowReconciler r(false, /*images_wait=*/false);
  RowChange deleted;
  deleted.id = "a";
  deleted.deleted = true;
  deleted.position = At(100);
  EXPECT_EQ(Verdict(r, deleted), Action::kGone);
  EXPECT_THAT(Read(r, {Row("a")}, At(50)), IsEmpty());
  EXPECT_THAT(Read(r, {Row("a")}, At(80)), IsEmpty());  // still before it
  // A purge deletes an acked row: nothing to check of reads.
  RowChange purged = deleted;
  purged.id = "b";
  purged.time_acked = kNow - 3600 * kSecond;
  purged.position = At(120);
  EXPECT_EQ(Verdict(r, purged), Action::kGone);
  EXPECT_THAT(Read(r, {Row("b")}, At(90)), ElementsAre("b"));
}

TEST(RowReconcilerTest, AChangeOfAnIdInFlightIsMsgqsOwn) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_EQ(Verdict(r, Change("a", /*priority=*/5)), Action::kDueRead);
  r.Sent("a", 0, kMono);
  RowChange postpone = Change("a", 5, kNow + 30 * kSecond);
  postpone.row = nullptr;  // postpones raise the epoch: no image
  EXPECT_EQ(Verdict(r, postpone), Action::kOwn);
  // Out of flight again: a read that started after both changes (it has
  // no position: rule 3 drops only rows changed while it ran) is queued.
  r.PostponesDone(r.TakePostpones(absl::InfiniteFuture()), {},
                  Outcome::kPermanent);
  EXPECT_THAT(Read(r, {Row("a", /*priority=*/0)}), ElementsAre("a"));
}

TEST(RowReconcilerTest, AHandBackIsQueuedAgainOnlyWhileItIsTheSends) {
  RowReconciler r(false, /*images_wait=*/false);
  const int64_t ack_wait = 30 * kSecond;
  Message m = Row("a");
  m.sent_at = kNow;
  r.Sent("a", 0, kMono);
  EXPECT_FALSE(r.HandBack(m, kNow + ack_wait, ack_wait));  // the poll's now
  EXPECT_TRUE(r.InFlight("a"));  // its postpone is still owed
  EXPECT_TRUE(r.HandBack(m, kNow + kSecond, ack_wait));
  EXPECT_FALSE(r.InFlight("a"));
  // Not while an ack of it runs: the ack settles it.
  r.Sent("a", 0, kMono);
  RowReconciler::Ticket ack = r.BeginAck({"a"});
  EXPECT_FALSE(r.HandBack(m, kNow + kSecond, ack_wait));
  r.SettleDone(ack, Outcome::kCommitted);
  // Sent, acked with `outcome`, then handed back.
  auto hand_back_after_ack = [&](const std::string& id, Outcome outcome) {
    r.Sent(id, 0, kMono);
    const RowReconciler::Ticket ticket = r.BeginAck({id});
    r.AcksWriting({id});
    r.SettleDone(ticket, outcome);
    Message sent = Row(id);
    sent.sent_at = kNow;
    return r.HandBack(sent, kNow + kSecond, ack_wait);
  };
  // Nor once msgq's ack of it committed (the binlog has not shown it).
  EXPECT_FALSE(hand_back_after_ack("d", Outcome::kCommitted));
  // But after a failed ack, as if none ran.
  EXPECT_TRUE(hand_back_after_ack("e", Outcome::kTransient));
  // Not when the binlog showed it gone meanwhile.
  r.Sent("b", 0, kMono);
  RowChange deleted;
  deleted.id = "b";
  deleted.deleted = true;
  EXPECT_EQ(Verdict(r, deleted), Action::kGone);
  Message b = Row("b");
  b.sent_at = kNow;
  EXPECT_FALSE(r.HandBack(b, kNow + kSecond, ack_wait));
}

TEST(RowReconcilerTest, OnlyAnAckMsgqDidNotWriteIsAckedBySql) {
  RowReconciler r(false, /*images_wait=*/false);
  RowReconciler::Ticket mine = r.BeginAck({"a"});
  r.AcksWriting({"a"});
  const RowReconciler::BinlogVerdict echo =
      r.OnBinlogChange(Acked("a"), kNow, /*reading=*/true, /*subscribed=*/true);
  EXPECT_EQ(echo.action, Action::kGone);
  EXPECT_FALSE(echo.acked_by_sql);
  r.SettleDone(mine, Outcome::kCommitted);
  EXPECT_TRUE(r.OnBinlogChange(Acked("b"), kNow, true, true).acked_by_sql);
  // A failed ack was not msgq's after all.
  RowReconciler::Ticket failed = r.BeginAck({"c"});
  r.AcksWriting({"c"});
  r.SettleDone(failed, Outcome::kTransient);
  EXPECT_TRUE(r.OnBinlogChange(Acked("c"), kNow, true, true).acked_by_sql);
}

TEST(RowReconcilerTest, TheEchoOfItsOwnPostponeLeavesAHandBackQueued) {
  RowReconciler r(false, /*images_wait=*/false);
  const int64_t postponed = kNow + 30 * kSecond;
  r.Sent("a", 0, kMono);
  r.PostponesDone(r.TakePostpones(absl::InfiniteFuture()),
                  {Postponement{"a", postponed}}, Outcome::kCommitted);
  Message m = Row("a");
  m.sent_at = kNow;
  EXPECT_TRUE(r.HandBack(m, kNow, 30 * kSecond));
  RowChange echo = Change("a", 0, postponed);
  echo.row = nullptr;
  EXPECT_EQ(Verdict(r, echo), Action::kOwn);
  // Once: an application's later change is a change.
  EXPECT_EQ(Verdict(r, echo), Action::kScheduled);
}

TEST(RowReconcilerTest, WhatTheManagerDoesWithAChangeDependsOnItsState) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_EQ(r.OnBinlogChange(Change("a"), kNow, /*reading=*/false,
                             /*subscribed=*/true)
                .action,
            Action::kNotReading);
  EXPECT_EQ(r.OnBinlogChange(Change("a"), kNow, /*reading=*/true,
                             /*subscribed=*/false)
                .action,
            Action::kDueIdle);
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow + kSecond)), Action::kScheduled);
  EXPECT_EQ(Verdict(r, Change("a")), Action::kDueRead);  // no images
}

TEST(RowReconcilerTest, TheCommitToSendClockStartsAtTheBinlogsDueRow) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_EQ(Verdict(r, Change("a")), Action::kDueRead);
  EXPECT_EQ(r.Queued("a"), kNow);
  EXPECT_EQ(r.Queued("a"), 0);  // the first queueing only
  EXPECT_EQ(Verdict(r, Change("b")), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("b", 0, kNow + kSecond)), Action::kScheduled);
  EXPECT_EQ(r.Queued("b"), 0);  // on time, not from its commit
}

TEST(RowReconcilerTest, AnImageIsUsedOnlyWhenNoReadCouldHaveSentTheRow) {
  RowReconciler r = Images();
  EXPECT_EQ(Verdict(r, Change("a")), Action::kDueImage);  // nothing read yet
  // A read at 200 returned rows: a change at or before 200 is in it (and
  // may have been sent from it); one after it is not.
  EXPECT_THAT(Read(r, {Row("b")}, At(200)), ElementsAre("b"));
  EXPECT_EQ(Verdict(r, Change("b", 0, kNow - kSecond, 150)), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 200)), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 201)), Action::kDueImage);
  // A read that returned nothing moves nothing; the latest with rows does.
  EXPECT_THAT(Read(r, {}, At(300)), IsEmpty());
  EXPECT_EQ(Verdict(r, Change("d", 0, kNow - kSecond, 250)), Action::kDueImage);
  EXPECT_THAT(Read(r, {Row("e")}, At(300)), ElementsAre("e"));
  EXPECT_EQ(Verdict(r, Change("d", 0, kNow - kSecond, 250)), Action::kDueRead);
  // Another file of the same log is later; another log's is not comparable.
  RowChange next_file = Change("f");
  next_file.position = {"binlog.000002", 4};
  EXPECT_EQ(Verdict(r, next_file), Action::kDueImage);
  RowChange other = Change("g");
  other.position = {"other-bin.000009", 900};
  EXPECT_EQ(Verdict(r, other), Action::kDueRead);
  RowChange unknown = Change("h");
  unknown.position = {};
  EXPECT_EQ(Verdict(r, unknown), Action::kDueRead);
  RowChange no_image = Change("i", 0, kNow - kSecond, 400);
  no_image.row = nullptr;
  EXPECT_EQ(Verdict(r, no_image), Action::kDueRead);
}

// After a failover to a server whose binlog has the same base name, its
// images are not compared with the old server's reads (their numbers mean
// nothing against each other): read by id until a read on the new server
// gives a position to compare with, as a new owner starts.
TEST(RowReconcilerTest, AnImageFromAnotherServerWaitsForARead) {
  RowReconciler r = Images();
  const BinlogPosition old_read{"binlog.000003", 500, "1@db-a:3306"};
  EXPECT_THAT(Read(r, {Row("a")}, old_read), ElementsAre("a"));
  RowChange same = Change("b");
  same.position = {"binlog.000003", 600, "1@db-a:3306"};
  EXPECT_EQ(Verdict(r, same), Action::kDueImage);
  RowChange moved = Change("c");
  moved.position = {"binlog.000003", 900, "2@db-b:3306"};
  EXPECT_EQ(Verdict(r, moved), Action::kDueRead);
  // The first read on the new server does not compare with the fence
  // either: images wait for a read that starts after it.
  EXPECT_THAT(Read(r, {Row("d")}, {"binlog.000003", 700, "2@db-b:3306"}),
              ElementsAre("d"));
  RowChange later = Change("e");
  later.position = {"binlog.000003", 800, "2@db-b:3306"};
  EXPECT_EQ(Verdict(r, later), Action::kDueRead);
  EXPECT_THAT(Read(r, {}, {"binlog.000003", 750, "2@db-b:3306"}), IsEmpty());
  RowChange after = Change("g");
  after.position = {"binlog.000003", 800, "2@db-b:3306"};
  EXPECT_EQ(Verdict(r, after), Action::kDueImage);
  RowChange earlier = Change("f");
  earlier.position = {"binlog.000003", 740, "2@db-b:3306"};
  EXPECT_EQ(Verdict(r, earlier), Action::kDueRead);
}

// A read's position is known only when it ends: an image that comes while
// it runs waits for it, and is used only if the read is older.
TEST(RowReconcilerTest, AnImageDuringAReadIsDecidedWhenTheReadEnds) {
  RowReconciler r = Images();
  uint64_t read = r.ReadStarts();
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 120)),
            Action::kDueDeferred);
  EXPECT_EQ(Verdict(r, Change("b", 0, kNow - kSecond, 90)),
            Action::kDueDeferred);
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 130)),
            Action::kDueDeferred);
  EXPECT_EQ(Verdict(r, Change("d", 0, kNow - kSecond, 95)),
            Action::kDueDeferred);
  std::vector<Message> rows = {Row("c"), Row("d")};
  RowReconciler::Deferred d = r.ReadEnds(read, &rows, At(100));
  ASSERT_EQ(d.images.size(), 1u);
  EXPECT_EQ(d.images[0].id, "a");  // after the read
  // "b" is in the read, not returned; "c" the read returned from before
  // its change (rule 3 drops that row; read by id); "d" the read returned
  // with the change in it: nothing to add.
  std::sort(d.read.begin(), d.read.end());
  EXPECT_THAT(d.read, ElementsAre("b", "c"));
  EXPECT_THAT(Ids(rows), ElementsAre("d"));

  // A later change replaces a deferred image; a failed read decides too.
  read = r.ReadStarts();
  EXPECT_EQ(Verdict(r, Change("e", 0, kNow - kSecond, 140)),
            Action::kDueDeferred);
  EXPECT_EQ(Verdict(r, Acked("e")), Action::kGone);
  EXPECT_EQ(Verdict(r, Change("f", 0, kNow - kSecond, 150)),
            Action::kDueDeferred);
  // msgq acks an id meanwhile: its image may be older than the ack.
  EXPECT_EQ(Verdict(r, Change("g", 0, kNow - kSecond, 160)),
            Action::kDueDeferred);
  r.SettleDone(r.BeginAck({"g"}), Outcome::kCommitted);
  d = r.ReadEnds(read, nullptr);
  ASSERT_EQ(d.images.size(), 1u);
  EXPECT_EQ(d.images[0].id, "f");
  EXPECT_THAT(d.read, ElementsAre("g"));
}

// Where a read has rows and no position (MySQL, no binary log), images
// stop until a read started after it ends with one.
TEST(RowReconcilerTest, AReadWithoutAPositionStopsImagesUntilALaterRead) {
  RowReconciler r = Images();
  EXPECT_THAT(Read(r, {Row("a")}, At(100)), ElementsAre("a"));
  const uint64_t early = r.ReadStarts();
  EXPECT_THAT(Read(r, {Row("b")}), ElementsAre("b"));  // no position
  std::vector<Message> rows;
  r.ReadEnds(early, &rows, At(400));  // started before: not enough
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 500)), Action::kDueRead);
  EXPECT_THAT(Read(r, {}, At(450)), IsEmpty());
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 450)), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("c", 0, kNow - kSecond, 451)), Action::kDueImage);
}

TEST(RowReconcilerTest, AnImageOlderThanMsgqsCommittedWriteIsReadById) {
  RowReconciler r = Images();
  const int64_t postponed = kNow + 30 * kSecond;
  r.Sent("a", 0, kMono);
  r.PostponesDone(r.TakePostpones(absl::InfiniteFuture()),
                  {Postponement{"a", postponed}}, Outcome::kCommitted);
  // Shown before the postpone's echo: committed before the postpone.
  EXPECT_EQ(Verdict(r, Change("a", /*priority=*/1)), Action::kDueRead);
  RowChange echo = Change("a", 0, postponed);
  echo.row = nullptr;
  EXPECT_EQ(Verdict(r, echo), Action::kScheduled);
  // After the echo the binlog shows newer commits: images again.
  EXPECT_EQ(Verdict(r, Change("a", /*priority=*/2)), Action::kDueImage);

  // The latest of msgq's writes counts: a nack after a postpone.
  r.Sent("b", 0, kMono);
  r.PostponesDone(r.TakePostpones(absl::InfiniteFuture()),
                  {Postponement{"b", postponed}}, Outcome::kCommitted);
  const RowReconciler::Ticket nack = r.BeginHold({"b"});
  r.HoldDone(nack, Outcome::kCommitted, {Postponement{"b", kNow + kSecond}});
  RowChange postpone_echo = Change("b", 0, postponed);
  postpone_echo.row = nullptr;
  EXPECT_EQ(Verdict(r, postpone_echo), Action::kOwn);
  EXPECT_EQ(Verdict(r, Change("b", /*priority=*/1)), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("b", 0, kNow + kSecond)), Action::kScheduled);
  EXPECT_EQ(Verdict(r, Change("b", /*priority=*/2)), Action::kDueImage);

  // A failed write is nobody's echo.
  const RowReconciler::Ticket failed = r.BeginHold({"c"});
  r.HoldDone(failed, Outcome::kTransient, {Postponement{"c", kNow}});
  EXPECT_EQ(Verdict(r, Change("c")), Action::kDueImage);
}

TEST(RowReconcilerTest, AnEchoShownBeforeItsWritesResultEndsTheWait) {
  RowReconciler r = Images();
  const int64_t postponed = kNow + 30 * kSecond;
  r.Sent("a", 0, kMono);
  const std::vector<RowReconciler::Postpone> taken =
      r.TakePostpones(absl::InfiniteFuture());
  RowChange echo = Change("a", 0, postponed);
  echo.row = nullptr;
  EXPECT_EQ(Verdict(r, echo), Action::kOwn);  // still in flight
  r.PostponesDone(taken, {Postponement{"a", postponed}}, Outcome::kCommitted);
  // Every commit the binlog shows from now on is newer than the postpone.
  EXPECT_EQ(Verdict(r, Change("a", /*priority=*/1)), Action::kDueImage);

  // Another change shown in flight is not the echo: the wait stands.
  r.Sent("b", 0, kMono);
  const std::vector<RowReconciler::Postpone> taken_b =
      r.TakePostpones(absl::InfiniteFuture());
  EXPECT_EQ(Verdict(r, Change("b", /*priority=*/1)), Action::kOwn);
  r.PostponesDone(taken_b, {Postponement{"b", postponed}}, Outcome::kCommitted);
  EXPECT_EQ(Verdict(r, Change("b", /*priority=*/2)), Action::kDueRead);
}

// Rule 5 by position: msgq's ack committed as 0-1-5 acked b; a was acked
// by an application at 0-1-4 (msgq's changed nothing of it). The binlog
// shows both later: a's ack is the application's, b's is msgq's echo.
TEST(RowReconcilerTest, AnAckIsMsgqsOnlyWhenItsGtidIsTheWrites) {
  RowReconciler r(false, /*images_wait=*/false);
  const RowReconciler::Ticket ack = r.BeginAck({"a", "b"});
  r.AcksWriting({"a", "b"});
  r.SettleDone(ack, Outcome::kCommitted, std::string("0-1-5"));
  RowChange app = Acked("a");
  app.gtid = "0-1-4";
  EXPECT_TRUE(r.OnBinlogChange(app, kNow, true, true).acked_by_sql);
  RowChange echo = Acked("b");
  echo.gtid = "0-1-5";
  EXPECT_FALSE(r.OnBinlogChange(echo, kNow, true, true).acked_by_sql);
}

// An application's UPDATE that happens to write the time_next of msgq's
// committed postpone is not its echo: only the postpone's GTID is.
TEST(RowReconcilerTest, APostponesEchoIsKnownByItsGtid) {
  RowReconciler r(false, /*images_wait=*/false);
  r.Sent("a", 0, kMono);
  const int64_t later = kNow + 30 * kSecond;
  r.PostponesDone(r.TakePostpones(absl::InfiniteFuture()),
                  {Postponement{"a", later}}, Outcome::kCommitted,
                  std::string("0-1-8"));
  RowChange app = Change("a", 0, later);
  app.gtid = "0-1-7";
  EXPECT_EQ(Verdict(r, app), Action::kScheduled);
  RowChange echo = Change("a", 0, later);
  echo.gtid = "0-1-8";
  EXPECT_EQ(Verdict(r, echo), Action::kOwn);
  // Past it, a change with that time_next is an application's again.
  RowChange after = Change("a", 0, later);
  after.gtid = "0-1-9";
  EXPECT_EQ(Verdict(r, after), Action::kScheduled);
}

// R0: a new manager (or owner) uses images only after the position of
// its first read, even one that returned nothing: the predecessor's reads
// all started before it.
TEST(RowReconcilerTest, ANewOwnerUsesImagesOnlyAfterItsFirstRead) {
  RowReconciler r(true, /*images_wait=*/true);  // a reload
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 900)), Action::kDueRead);
  EXPECT_THAT(Read(r, {}, At(300)), IsEmpty());
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 300)), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 301)), Action::kDueImage);
  // Granted again: a read already running is older than the grant.
  const uint64_t running = r.ReadStarts();
  r.ImagesWait();
  std::vector<Message> none;
  r.ReadEnds(running, &none, At(500));
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 900)), Action::kDueRead);
  EXPECT_THAT(Read(r, {}, At(600)), IsEmpty());
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 600)), Action::kDueRead);
  EXPECT_EQ(Verdict(r, Change("a", 0, kNow - kSecond, 601)), Action::kDueImage);
}

TEST(RowReconcilerTest, WithoutRowImagesReadsAreNotRemembered) {
  RowReconciler r(false, /*images_wait=*/false);
  EXPECT_THAT(Read(r, {Row("a")}), ElementsAre("a"));
  EXPECT_EQ(Verdict(r, Change("a")), Action::kDueRead);
}

}  // namespace
}  // namespace msgq
