// TransactionChanges: a transaction's changes are held until its commit,
// grouped by table in first-seen order; past a bound its images go and
// everything is handed out at once.
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
  EXPECT_EQ(Show(txn.Commit()), "a.q:1*,2,1*;a.r:9*");
  EXPECT_EQ(txn.held(), 0u);
  EXPECT_EQ(Show(txn.Commit()), "");
}

TEST(TransactionChangesTest, ClearForgetsAnUnfinishedTransaction) {
  TransactionChanges txn(100, 1000);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 5)})), "");
  txn.Clear();
  EXPECT_EQ(Show(txn.Commit()), "");
}

// Past the image bytes: everything held goes out without images, and so do
// the transaction's later changes; the next transaction is held again.
TEST(TransactionChangesTest, PastTheImageBoundImagesGoAndNothingIsHeld) {
  TransactionChanges txn(100, 10);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 6)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("2", 6)})), "a.q:1,2");
  EXPECT_EQ(Show(txn.Add("a", "r", {Change("3", 1)})), "a.r:3");
  EXPECT_EQ(txn.held(), 0u);
  EXPECT_EQ(Show(txn.Commit()), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("4", 6)})), "");
  EXPECT_EQ(Show(txn.Commit()), "a.q:4*");
}

TEST(TransactionChangesTest, PastTheChangeCountLikewise) {
  TransactionChanges txn(2, 1000);
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("1", 1), Change("2", 1)})), "");
  EXPECT_EQ(Show(txn.Add("a", "q", {Change("3", 1)})), "a.q:1,2,3");
  EXPECT_EQ(Show(txn.Commit()), "");
}

}  // namespace
}  // namespace msgq
