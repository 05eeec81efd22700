// The acks of several MessageAck RPCs in one write share their UPDATE
// statements (MysqlMessageStore::MergeAcks), and each RPC still gets the
// count it would have got alone: a merged statement that misses a row
// rolls back to its savepoint and the RPCs' acks run one by one; one that
// fails lets each RPC's acks run alone, so only the RPC at fault fails.
// Read back from a real private MariaDB's general log.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/store_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kNow = 1'800'000'000'000'000'000;

class StoreMergedAcksTest : public StoreSqlTest {
 protected:
  // The ack UPDATE of `ids` (a comma-separated list) as MysqlMessageStore
  // writes it.
  static std::string Ack(const std::string& ids) {
    return absl::StrCat(
        "UPDATE `msgq`.`q` FORCE INDEX (PRIMARY) "
        "SET `time_acked` = ",
        kNow, ", `time_next` = NULL WHERE `id` IN (", ids,
        ") AND `time_acked` IS NULL AND `time_next` IS NOT NULL");
  }
  // Writes a batch of these ack groups at kNow with the store of msgq.q
  // (built now: after the test set the table up), logging the statements.
  absl::StatusOr<WriteResult> WriteAcks(
      std::vector<std::vector<std::string>> groups) {
    auto store = Store("q");
    if (store == nullptr) return absl::InternalError("no store");
    StartLog();
    if (HasFatalFailure()) return absl::InternalError("no general log");
    WriteBatch batch;
    batch.now = kNow;
    batch.ack_groups = std::move(groups);
    return store->Write(batch);
  }
  // Each group's count, or its error's code and message.
  static std::vector<std::string> Counts(const WriteResult& r) {
    std::vector<std::string> out;
    for (const absl::StatusOr<int64_t>& a : r.acks) {
      out.push_back(a.ok() ? absl::StrCat(*a) : a.status().ToString());
    }
    return out;
  }
  std::string Acked() {
    return db_->Scalar(
        "SELECT GROUP_CONCAT(CONCAT(id, '@', time_acked) ORDER BY id) FROM "
        "msgq.q WHERE time_acked IS NOT NULL");
  }
  static std::string AckedAtNow(const std::vector<int>& ids) {
    std::string out;
    for (int id : ids) {
      absl::StrAppend(&out, out.empty() ? "" : ",", id, "@", kNow);
    }
    return out;
  }
};

TEST_F(StoreMergedAcksTest, SeveralRpcsShareOneStatement) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  // Id 2 twice: the first RPC that names it counts it, as if alone.
  auto written = WriteAcks({{"1", "2"}, {"3"}, {"2", "4"}});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(Counts(*written), ElementsAre("2", "1", "1"));
  EXPECT_THAT(StopLog("q", "msgq_acks"),
              ElementsAre("SAVEPOINT `msgq_acks`", Ack("1,2,3,4")));
  EXPECT_EQ(Acked(), AckedAtNow({1, 2, 3, 4}));
}

TEST_F(StoreMergedAcksTest, AStatementThatMissesARowFallsBackToEachRpcAlone) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.q SET time_acked = 7, time_next = NULL WHERE id = 3"));
  // 3 is acked already, 1 by the first RPC, 9 does not exist.
  auto written = WriteAcks({{"1"}, {"3", "1"}, {"2", "9"}});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(Counts(*written), ElementsAre("1", "0", "1"));
  EXPECT_THAT(StopLog("q", "msgq_acks"),
              ElementsAre("SAVEPOINT `msgq_acks`", Ack("1,3,2,9"),
                          "ROLLBACK TO SAVEPOINT `msgq_acks`", Ack("1"),
                          Ack("3,1"), Ack("2,9")));
  EXPECT_EQ(Acked(), absl::StrCat(AckedAtNow({1, 2}), ",3@7"));
}

TEST_F(StoreMergedAcksTest, AMalformedIdFailsOnlyItsRpc) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  auto written = WriteAcks({{"1"}, {"x"}, {"2"}});
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->acks.size(), 3u);
  EXPECT_EQ(written->acks[1].status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*written->acks[0], 1);
  EXPECT_EQ(*written->acks[2], 1);
  EXPECT_THAT(StopLog("q", "msgq_acks"),
              ElementsAre("SAVEPOINT `msgq_acks`", Ack("1,2")));
  EXPECT_EQ(Acked(), AckedAtNow({1, 2}));
}

// A merged statement that fails (here a trigger refuses id 7) is not
// charged to every RPC in it: each RPC's acks run alone, the one naming 7
// fails, the others are written.
TEST_F(StoreMergedAcksTest, AFailingStatementFailsOnlyTheRpcAtFault) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 8));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE TRIGGER msgq.refuse_7 BEFORE UPDATE ON msgq.q FOR EACH ROW "
           "IF NEW.id = 7 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
           "'no acks for 7'; END IF"));
  auto written = WriteAcks({{"1"}, {"6", "7"}, {"2"}});
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->acks.size(), 3u);
  EXPECT_FALSE(written->acks[1].ok());
  EXPECT_THAT(written->acks[1].status().message(), HasSubstr("no acks for 7"));
  EXPECT_EQ(*written->acks[0], 1);
  EXPECT_EQ(*written->acks[2], 1);
  EXPECT_THAT(StopLog("q", "msgq_acks"),
              ElementsAre("SAVEPOINT `msgq_acks`", Ack("1,6,7,2"), Ack("1"),
                          Ack("6,7"), Ack("1"), Ack("2")));
  EXPECT_EQ(Acked(), AckedAtNow({1, 2}));
}

TEST_F(StoreMergedAcksTest, ManyIdsAreWrittenInStatementsOf1000) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2001));
  std::vector<std::vector<std::string>> groups(3);
  for (int id = 1; id <= 2001; ++id) {
    groups[id <= 1000 ? 0 : (id <= 2000 ? 1 : 2)].push_back(absl::StrCat(id));
  }
  auto written = WriteAcks(std::move(groups));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(Counts(*written), ElementsAre("1000", "1000", "1"));
  std::vector<size_t> ids_per_update;
  for (const std::string& sql : StopLog("q")) {
    const size_t in = sql.find("`id` IN (");
    const size_t end = sql.find(')', in);
    ASSERT_NE(end, std::string::npos) << sql;
    ids_per_update.push_back(
        std::count(sql.begin() + in, sql.begin() + end, ',') + 1);
  }
  EXPECT_THAT(ids_per_update, ElementsAre(1000, 1000, 1));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked = " +
                        absl::StrCat(kNow)),
            "2001");
}

}  // namespace
}  // namespace msgq::testing
