// TransactionChanges: a transaction's changes are held until its commit,
// then ready (several transactions together), grouped by table in
// first-seen order; past a bound its images go and everything is handed
// out at once. XA transactions wait for their outcome.
#include "engine/binlog/transaction_changes.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

RowChange Change(const std::string& id, size_t image_bytes = 0) {
  RowChange c;
  c.id = id;
  c.time_next = 1;
  if (image_bytes > 0) {
    auto row = std::make_shared<PackedRow>();
    row->values.assign(image_bytes, 'x');
    row->lengths = {static_cast<int64_t>(image_bytes)};
    c.row = std::move(row);
  }
  return c;
}

// "db.table:id,id;db.table:id" of what was handed out ("*" marks an image).
std::string Show(const std::vector<TransactionChanges::TableChanges>& out) {
  std::string s;
  for (const auto& t : out) {
    if (!s.empty()) s += ";";
    s += t.db + "." + t.table + ":";
    for (size_t i = 0; i < t.changes.size(); ++i) {
      s += (i > 0 ? "," : "") + t.changes[i].id +
           (t.changes[i].row != nullptr ? "*" : "");
    }
  }
  return s;
}

TEST(TransactionChangesTest, HeldUntilCommitGroupedByTableInOrder) {
  TransactionChanges txn(100, 1000);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 5), Change("2")})), "");
  EXPECT_EQ(Show(txn.Add("a", "r", {Change("9", 5)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 6)})), "");
  EXPECT_EQ(txn.held(), 4u);
  EXPECT_EQ(Show(txn.TakeReady()), "");
  txn.Commit();
  EXPECT_EQ(txn.held(), 0u);
  EXPECT_EQ(txn.ready(), 4u);
  // A second transaction joins what is ready, tables in first-seen order.
  EXPECT_EQ(Show(txn.Add("a", "s", {Change("7")})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("3", 1)})), "");
  txn.Commit();
  EXPECT_EQ(txn.ready(), 6u);
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:1*,2,1*,3*;a.r:9*;a.s:7");
  EXPECT_EQ(txn.ready(), 0u);
  EXPECT_EQ(Show(txn.TakeReady()), "");
}

TEST(TransactionChangesTest, AbortForgetsTheOpenTransactionOnly) {
  TransactionChanges txn(100, 1000);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 5)})), "");
  txn.Commit();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("2", 5)})), "");
  txn.Abort();
  txn.Commit();
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:1*");
}

// Past the image bytes: what is ready goes out first, as it was, then the
// open transaction's changes without images, and so do its later changes;
// the next transaction is held again.
TEST(TransactionChangesTest, PastTheImageBoundImagesGoAndNothingIsHeld) {
  TransactionChanges txn(100, 10);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("0", 9)})), "");
  txn.Commit();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 6)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("2", 6)})), "a.q:0*,1,2");
  EXPECT_EQ(Show(txn.Add("a", "r", {Change("3", 1)})), "a.r:3");
  EXPECT_EQ(txn.held(), 0u);
  EXPECT_EQ(txn.ready(), 0u);
  txn.Commit();
  EXPECT_EQ(Show(txn.TakeReady()), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("4", 6)})), "");
  txn.Commit();
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:4*");
}

TEST(TransactionChangesTest, PastTheChangeCountLikewise) {
  TransactionChanges txn(2, 1000);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 1), Change("2", 1)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("3", 1)})), "a.q:1,2,3");
  txn.Commit();
  EXPECT_EQ(Show(txn.TakeReady()), "");
}

// A prepared XA transaction's changes wait, ids only, for XA COMMIT and go
// at XA ROLLBACK; transactions committed meanwhile are not held up.
TEST(TransactionChangesTest, PreparedXaWaitsForItsOutcome) {
  TransactionChanges txn(100, 1000);
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 5), Change("2", 5)})), "");
  txn.Prepare("x");
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("3", 5)})), "");
  txn.Prepare("y");
  EXPECT_EQ(txn.held(), 0u);
  EXPECT_EQ(txn.prepared(), 3u);
  EXPECT_EQ(txn.prepared_transactions(), 2u);
  txn.Commit();
  EXPECT_EQ(Show(txn.TakeReady()), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("4", 5)})), "");
  txn.Commit();
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:4*");
  txn.RollbackPrepared("x");
  EXPECT_FALSE(txn.CommitPrepared("x"));
  EXPECT_EQ(Show(txn.TakeReady()), "");
  EXPECT_TRUE(txn.CommitPrepared("y"));
  EXPECT_EQ(txn.ready(), 1u);
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:3");
  EXPECT_EQ(txn.prepared(), 0u);
  EXPECT_EQ(txn.prepared_transactions(), 0u);
  // Unknown (prepared before the stream was followed): the caller polls.
  EXPECT_FALSE(txn.CommitPrepared("z"));
}

// An XA group is never handed out early, whatever its size: past the bound
// its changes are dropped and its commit says so.
TEST(TransactionChangesTest, XaPastTheBoundsIsDroppedNotHandedOut) {
  TransactionChanges txn(2, 10);
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 9), Change("2", 9)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("3", 9)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("4", 9)})), "");
  txn.Prepare("big");
  EXPECT_EQ(txn.prepared(), 0u);
  EXPECT_FALSE(txn.CommitPrepared("big"));
  EXPECT_EQ(Show(txn.TakeReady()), "");
  // Prepared changes over the bound in all: the newest is dropped.
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("5"), Change("6")})), "");
  txn.Prepare("a");
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("7")})), "");
  txn.Prepare("b");
  EXPECT_FALSE(txn.CommitPrepared("b"));
  EXPECT_TRUE(txn.CommitPrepared("a"));
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:5,6");
}

TEST(TransactionChangesTest, PreparedTransactionsAreBoundedInNumber) {
  TransactionChanges txn(100, 1000);
  for (size_t i = 0; i <= TransactionChanges::kMaxPrepared; ++i) {
    txn.StartXa();
    txn.Prepare("x" + std::to_string(i));
  }
  EXPECT_EQ(txn.prepared_transactions(), TransactionChanges::kMaxPrepared);
  EXPECT_FALSE(txn.CommitPrepared("x0"));  // the oldest went
  EXPECT_TRUE(txn.CommitPrepared("x1"));
  EXPECT_TRUE(txn.CommitPrepared(
      "x" + std::to_string(TransactionChanges::kMaxPrepared)));
}

// A cut stream resumes at the group's start: the prepared group is read
// again and replaces what was held, nothing twice.
TEST(TransactionChangesTest, AbortInsideAnXaGroupForgetsItOnly) {
  TransactionChanges txn(100, 1000);
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1")})), "");
  txn.Prepare("x");
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("2")})), "");
  txn.Abort();
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("2")})), "");
  txn.Prepare("y");
  txn.StartXa();
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1")})), "");
  txn.Prepare("x");
  EXPECT_EQ(txn.prepared(), 2u);
  EXPECT_TRUE(txn.CommitPrepared("x"));
  EXPECT_TRUE(txn.CommitPrepared("y"));
  EXPECT_EQ(Show(txn.TakeReady()), "a.q:1,2");
}

}  // namespace
}  // namespace msgq
