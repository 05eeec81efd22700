// The MessageStore::Write contract (message_store.h), as FakeMessageStore
// implements it for the manager's unit tests: the postpones and each group
// fail on their own; only UNAVAILABLE and ABORTED fail the whole call, and
// then nothing was applied. Then failure handling (nacks, extends, redrives,
// dead rows; docs/tables.md#when-work-fails) with the counts the SQL reports
// (tests/store_failure_test.cc checks the same against MariaDB).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "engine/queue/fake_message_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using Op = FakeMessageStore::Op;

class MessageStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* id : {"1", "2", "3", "4"}) store_.PutDue(id, 100);
  }
  WriteBatch Batch() {
    WriteBatch b;
    b.now = 500;
    b.postpones = {{"1", 1000}};
    b.ack_groups = {{"2"}, {"3", "x"}, {"4"}};
    return b;
  }
  FakeMessageStore store_;
};

TEST_F(MessageStoreContractTest, AllUnitsApply) {
  absl::StatusOr<WriteResult> r = store_.Write(Batch());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->postpones.ok());
  ASSERT_EQ(r->acks.size(), 3u);
  EXPECT_EQ(*r->acks[0], 1);
  EXPECT_EQ(*r->acks[1], 1);
  EXPECT_EQ(*r->acks[2], 1);
  EXPECT_EQ(store_.Find("1")->time_next, 1000);
  EXPECT_EQ(store_.Find("1")->epoch, 1);
  EXPECT_EQ(store_.Find("3")->time_acked, 500);
}

TEST_F(MessageStoreContractTest, AFailingAckGroupFailsAlone) {
  store_.FailAckGroupsWith("x", absl::InvalidArgumentError("bad id"));
  absl::StatusOr<WriteResult> r = store_.Write(Batch());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->postpones.ok());
  EXPECT_EQ(*r->acks[0], 1);
  EXPECT_EQ(r->acks[1].status(), absl::InvalidArgumentError("bad id"));
  EXPECT_EQ(*r->acks[2], 1);
  EXPECT_FALSE(store_.Find("3")->time_acked.has_value());  // not applied
  EXPECT_EQ(store_.Find("2")->time_acked, 500);
  EXPECT_EQ(store_.Find("4")->time_acked, 500);
  EXPECT_EQ(store_.Find("1")->epoch, 1);
}

TEST_F(MessageStoreContractTest, FailingPostponesLeaveTheAcksApplied) {
  store_.FailPostponesNext(absl::InternalError("refused"));
  absl::StatusOr<WriteResult> r = store_.Write(Batch());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->postpones, absl::InternalError("refused"));
  EXPECT_EQ(store_.Find("1")->epoch, 0);
  EXPECT_EQ(store_.Find("1")->time_next, 100);
  EXPECT_EQ(*r->acks[0], 1);
  EXPECT_EQ(*r->acks[1], 1);
  // Only the next Write's postpones fail.
  r = store_.Write(Batch());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->postpones.ok());
  EXPECT_EQ(store_.Find("1")->epoch, 1);
}

TEST_F(MessageStoreContractTest, TransientFailureAppliesNothing) {
  for (absl::Status s :
       {absl::UnavailableError("gone"), absl::AbortedError("deadlock")}) {
    store_.FailNext(Op::kWrite, s);
    absl::StatusOr<WriteResult> r = store_.Write(Batch());
    EXPECT_EQ(r.status(), s);
    EXPECT_EQ(store_.Find("1")->epoch, 0);
    EXPECT_FALSE(store_.Find("2")->time_acked.has_value());
  }
}

TEST_F(MessageStoreContractTest, PermanentCallFailureFailsEveryUnit) {
  store_.FailNext(Op::kWrite, absl::InternalError("bad"));
  absl::StatusOr<WriteResult> r = store_.Write(Batch());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->postpones, absl::InternalError("bad"));
  for (const auto& ack : r->acks) {
    EXPECT_EQ(ack.status(), absl::InternalError("bad"));
  }
  EXPECT_EQ(store_.writes()[0].status, absl::InternalError("bad"));
  EXPECT_EQ(store_.Find("1")->epoch, 0);
  EXPECT_FALSE(store_.Find("2")->time_acked.has_value());
}

TEST_F(MessageStoreContractTest, NoPostponesMeansPostponesOk) {
  store_.FailPostponesNext(absl::InternalError("refused"));
  WriteBatch b = Batch();
  b.postpones.clear();
  absl::StatusOr<WriteResult> r = store_.Write(b);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->postpones.ok());
}

// ---- Failure handling -----------------------------------------------------

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kLater = 2'000'000;

MATCHER_P(Holds, value, "") { return arg.ok() && *arg == value; }
MATCHER_P2(IsCount, retried, dead, "") {
  return arg.ok() && arg->retried == retried && arg->dead == dead;
}

class FakeFailureTest : public ::testing::Test {
 protected:
  // A pending row sent `epoch` times, due at kNow.
  void Sent(const std::string& id, int64_t epoch,
            std::optional<int64_t> time_created = std::nullopt) {
    store_.PutDue(id, kNow, 0, epoch);
    FakeMessageStore::Row row = *store_.Find(id);
    row.time_created = time_created;
    store_.Put(row);
  }
  WriteBatch Batch() {
    WriteBatch b;
    b.now = kNow;
    return b;
  }
  absl::StatusOr<WriteResult> Nack(std::vector<Nack> nacks,
                                   std::string reason) {
    WriteBatch b = Batch();
    b.nack_groups.push_back({std::move(nacks), std::move(reason)});
    return store_.Write(b);
  }
  FakeMessageStore store_;
};

TEST_F(FakeFailureTest, NackRetriesOrKillsOnlyTheCurrentDelivery) {
  store_.set_schema({.last_error_chars = 4});
  for (const char* id : {"1", "2", "3"}) Sent(id, 1);
  store_.PutAcked("4", 50);
  absl::StatusOr<WriteResult> r = Nack({{"1", 0, kLater},
                                        {"2", 0, std::nullopt},
                                        {"3", 5, kLater},
                                        {"4", 0, kLater},
                                        {"9", 0, std::nullopt}},
                                       "boom!");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->nacks.size(), 1u);
  EXPECT_THAT(r->nacks[0], IsCount(1, 1));
  const FakeMessageStore::Row* one = store_.Find("1");
  EXPECT_EQ(one->time_next, kLater);
  EXPECT_EQ(one->epoch, 1);
  EXPECT_EQ(one->last_error, "boom");  // cut to the column
  EXPECT_EQ(one->time_dead, std::nullopt);
  const FakeMessageStore::Row* two = store_.Find("2");
  EXPECT_EQ(two->time_next, std::nullopt);
  EXPECT_EQ(two->time_dead, kNow);
  EXPECT_EQ(two->last_error, "boom");
  EXPECT_EQ(store_.Find("3")->time_next, kNow);  // stale epoch
  EXPECT_EQ(store_.Find("4")->time_acked, 50);
  EXPECT_THAT(store_.CountDead(), Holds(1));

  // Invalid UTF-8 is stored as LastErrorText makes it.
  r = Nack({{"1", 0, std::nullopt}}, "\xFFok");
  EXPECT_THAT(r->nacks[0], IsCount(0, 1));
  EXPECT_EQ(store_.Find("1")->last_error, "\xEF\xBF\xBDok");
  // A dead row is neither acked, postponed, nacked nor extended.
  WriteBatch b = Batch();
  b.ack_groups = {{"2"}};
  b.postpones = {{"2", kLater}};
  b.nack_groups.push_back({{{"2", 0, kLater}}, "again"});
  b.extend_groups.push_back({{{"2", 0}}, kLater});
  r = store_.Write(b);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->acks, ElementsAre(Holds(0)));
  EXPECT_THAT(r->nacks[0], IsCount(0, 0));
  EXPECT_THAT(r->extends, ElementsAre(Holds(0)));
  EXPECT_EQ(store_.Find("2")->time_next, std::nullopt);
  EXPECT_EQ(store_.Find("2")->epoch, 1);
  EXPECT_EQ(store_.Find("2")->last_error, "boom");
}

TEST_F(FakeFailureTest, EmptyReasonOrNoColumnLeavesLastError) {
  store_.set_schema({.last_error_chars = 0});
  Sent("1", 1);
  EXPECT_THAT(Nack({{"1", 0, std::nullopt}}, "x")->nacks[0], IsCount(0, 1));
  EXPECT_EQ(store_.Find("1")->last_error, std::nullopt);
  store_.set_schema({});
  Sent("2", 1);
  EXPECT_THAT(Nack({{"2", 0, kLater}}, "first")->nacks[0], IsCount(1, 0));
  EXPECT_THAT(Nack({{"2", 0, kLater + 1}}, "")->nacks[0], IsCount(1, 0));
  EXPECT_EQ(store_.Find("2")->last_error, "first");
  // Nothing changes: counted 0, as MariaDB counts changed rows.
  EXPECT_THAT(Nack({{"2", 0, kLater + 1}}, "")->nacks[0], IsCount(0, 0));
}

TEST_F(FakeFailureTest, RetriesPastTheLimitsDie) {
  store_.set_schema({.max_attempts = 3, .max_age = absl::Seconds(10)});
  const int64_t old = kNow - absl::ToInt64Nanoseconds(absl::Seconds(11));
  Sent("1", 3, kNow);  // third send
  Sent("2", 1, old);   // too old
  Sent("3", 2, kNow);  // retried
  Sent("4", 1);        // no time_created: never too old
  absl::StatusOr<WriteResult> r = Nack(
      {{"1", 2, kLater}, {"2", 0, kLater}, {"3", 1, kLater}, {"4", 0, kLater}},
      "r");
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->nacks[0], IsCount(2, 2));
  EXPECT_EQ(store_.Find("1")->time_next, std::nullopt);
  EXPECT_EQ(store_.Find("1")->time_dead, kNow);
  EXPECT_EQ(store_.Find("2")->time_next, std::nullopt);
  EXPECT_EQ(store_.Find("3")->time_next, kLater);
  EXPECT_EQ(store_.Find("4")->time_next, kLater);
  // Per distinct (epoch, time_next) (three here): a kill and a retry
  // statement each.
  EXPECT_EQ(store_.statements(), 6);
}

TEST_F(FakeFailureTest, ExtendChangesOnlyTheHoldersRow) {
  Sent("1", 2);
  Sent("2", 2);
  store_.PutAcked("3", 5);
  WriteBatch b = Batch();
  b.extend_groups.push_back({{{"1", 1}, {"1", 1}, {"3", 2}}, kLater});
  b.extend_groups.push_back({{{"2", 0}}, kLater});  // stale
  b.extend_groups.push_back({{}, kLater});
  absl::StatusOr<WriteResult> r = store_.Write(b);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->extends, ElementsAre(Holds(1), Holds(0), Holds(0)));
  EXPECT_EQ(store_.Find("1")->time_next, kLater);
  EXPECT_EQ(store_.Find("2")->time_next, kNow);
  EXPECT_EQ(store_.statements(), 3);  // one per distinct epoch of a group
}

TEST_F(FakeFailureTest, RedriveByIdsAndAll) {
  store_.PutDead("1", 3, 10, "why");
  store_.PutDead("2", 4, 10);
  store_.PutDead("3", 5, 10);
  Sent("4", 1);
  WriteBatch b = Batch();
  b.redrive_groups = {{{"1", "1", "4", "99"}, false}, {{}, false}};
  absl::StatusOr<WriteResult> r = store_.Write(b);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->redrives, ElementsAre(Holds(1), Holds(0)));
  const FakeMessageStore::Row* one = store_.Find("1");
  EXPECT_EQ(one->time_next, kNow);
  EXPECT_EQ(one->epoch, 0);
  EXPECT_EQ(one->time_dead, std::nullopt);
  EXPECT_EQ(one->last_error, "why");
  EXPECT_EQ(store_.Find("4")->epoch, 1);
  b.redrive_groups = {{{"ignored"}, true}};
  r = store_.Write(b);
  EXPECT_THAT(r->redrives, ElementsAre(Holds(2)));
  EXPECT_THAT(store_.CountDead(), Holds(0));
  absl::StatusOr<std::vector<Message>> due = store_.PollDue(kNow, 10);
  ASSERT_TRUE(due.ok());
  EXPECT_EQ(due->size(), 4u);
}

TEST_F(FakeFailureTest, EachGroupFailsAlone) {
  for (const char* id : {"1", "2", "3"}) Sent(id, 1);
  store_.PutDead("4", 1, 10);
  store_.FailGroupsWith(FakeMessageStore::Group::kNack, "x",
                        absl::InvalidArgumentError("bad nack"));
  store_.FailGroupsWith(FakeMessageStore::Group::kExtend, "x",
                        absl::InvalidArgumentError("bad extend"));
  store_.FailGroupsWith(FakeMessageStore::Group::kRedrive, "",
                        absl::InternalError("bad all"));
  WriteBatch b = Batch();
  b.nack_groups = {{{{"1", 0, std::nullopt}, {"x", 0, std::nullopt}}, "a"},
                   {{{"1", 0, kLater}}, "b"}};
  b.extend_groups = {{{{"2", 0}, {"x", 0}}, kLater}, {{{"3", 0}}, kLater}};
  b.redrive_groups = {{{}, true}, {{"4"}, false}};
  absl::StatusOr<WriteResult> r = store_.Write(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nacks[0].status(), absl::InvalidArgumentError("bad nack"));
  EXPECT_THAT(r->nacks[1], IsCount(1, 0));
  EXPECT_EQ(r->extends[0].status(), absl::InvalidArgumentError("bad extend"));
  EXPECT_THAT(r->extends[1], Holds(1));
  EXPECT_EQ(r->redrives[0].status(), absl::InternalError("bad all"));
  EXPECT_THAT(r->redrives[1], Holds(1));
  EXPECT_EQ(store_.Find("1")->time_next, kLater);  // only the second group
  EXPECT_EQ(store_.Find("2")->time_next, kNow);
  EXPECT_EQ(store_.Find("3")->time_next, kLater);
  EXPECT_EQ(store_.Find("4")->time_next, kNow);
  EXPECT_EQ(store_.writes()[0].result.nacks.size(), 2u);

  // A permanent call failure fails every group; a transient one applies
  // nothing.
  store_.Recover();
  store_.FailNext(Op::kWrite, absl::InternalError("bad"));
  r = store_.Write(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nacks[1].status(), absl::InternalError("bad"));
  EXPECT_EQ(r->extends[1].status(), absl::InternalError("bad"));
  EXPECT_EQ(r->redrives[0].status(), absl::InternalError("bad"));
  store_.FailNext(Op::kWrite, absl::AbortedError("deadlock"));
  EXPECT_EQ(store_.Write(b).status(), absl::AbortedError("deadlock"));
  EXPECT_EQ(store_.Find("3")->time_next, kLater);
  EXPECT_EQ(store_.Find("4")->epoch, 0);
}

TEST_F(FakeFailureTest, DeadReadsPageByIdAndPurge) {
  for (int id : {20, 1, 10, 2, 11}) {
    store_.PutDead(absl::StrCat(id), id, id, absl::StrCat("e", id));
  }
  Sent("5", 1, 7);
  store_.PutAcked("6", 1);
  EXPECT_THAT(store_.CountDead(), Holds(5));
  std::vector<std::string> pages;
  std::string after;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::vector<DeadRow>> page = store_.ListDead(after, 2);
    ASSERT_TRUE(page.ok());
    std::vector<std::string> ids;
    for (const DeadRow& row : *page) ids.push_back(row.id);
    pages.push_back(absl::StrJoin(ids, ","));
    if (page->empty()) break;
    after = page->back().id;
  }
  EXPECT_THAT(pages, ElementsAre("1,2", "10,11", "20", ""));
  EXPECT_EQ(store_.dead_lists()[1].after_id, "2");
  EXPECT_THAT(store_.dead_lists()[1].ids, ElementsAre("10", "11"));
  absl::StatusOr<std::vector<DeadRow>> first = store_.ListDead("", 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)[0].epoch, 1);
  EXPECT_EQ((*first)[0].last_error, "e1");
  EXPECT_EQ((*first)[0].time_dead, 1);
  EXPECT_THAT(store_.PurgeDead(11, 2), Holds(2));
  EXPECT_THAT(store_.PurgeDead(11, 2), Holds(1));
  EXPECT_THAT(store_.PurgeDead(11, 2), Holds(0));
  EXPECT_EQ(store_.dead_purges()[0].deleted, 2);
  EXPECT_EQ(store_.size(), 4u);
  store_.FailNext(Op::kCountDead, absl::UnavailableError("down"));
  EXPECT_EQ(store_.CountDead().status(), absl::UnavailableError("down"));
  EXPECT_EQ(store_.count_dead_calls(), 2);

  store_.set_schema({.has_time_dead = false});
  EXPECT_EQ(store_.PurgeDead(100, 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_.size(), 4u);
}

TEST_F(FakeFailureTest, PollReadsTimeCreatedAndNeverDeadRows) {
  Sent("1", 0, 123);
  store_.PutDead("2", 1, 5);
  absl::StatusOr<std::vector<Message>> due = store_.PollDue(kNow, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].time_created, 123);
  store_.set_schema({.has_time_created = false});
  due = store_.FetchDue({"1", "2"}, kNow);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].time_created, 0);
  EXPECT_THAT(store_.NextDueAfter(0), Holds(std::optional<int64_t>(kNow)));
}

TEST(FakeSchemaTest, SchemaOfATable) {
  MessageTable t;
  t.settings.max_attempts = 4;
  t.settings.max_age = absl::Seconds(9);
  t.has_time_created = true;
  t.has_time_dead = false;
  t.last_error_chars = 12;
  const FakeMessageStore::Schema s = FakeMessageStore::SchemaOf(t);
  EXPECT_EQ(s.max_attempts, 4);
  EXPECT_EQ(s.max_age, absl::Seconds(9));
  EXPECT_TRUE(s.has_time_created);
  EXPECT_FALSE(s.has_time_dead);
  EXPECT_EQ(s.last_error_chars, 12);
}

}  // namespace
}  // namespace msgq
