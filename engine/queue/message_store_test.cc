// The MessageStore::Write contract (message_store.h), as FakeMessageStore
// implements it for the manager's unit tests: the postpones and each ack
// group fail on their own; only UNAVAILABLE and ABORTED fail the whole call,
// and then nothing was applied.
#include <string>
#include <vector>

#include "engine/queue/fake_message_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

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

}  // namespace
}  // namespace msgq
