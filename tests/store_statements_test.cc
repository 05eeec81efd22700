// The exact SQL MysqlMessageStore sends for polls, fetches, postpones,
// acks and purges, with integer and text ids, read back from a real
// private MariaDB's general log (the write statements are built inside the
// store; the log shows what reached the server).
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "engine/sql/sql_literal.h"
#include "gmock/gmock.h"
#include "tests/store_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kNow = 1'800'000'000'000'000'000;
// What reads compare time_next with: MariaDB's clock (sql_literal.h).
const std::string kDbNow = kMysqlNowNs;

class StoreStatementsTest : public StoreSqlTest {};

TEST_F(StoreStatementsTest, IntegerIds) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(StartLog());
  auto polled = store->PollDue(kNow, 10);
  ASSERT_TRUE(polled.ok()) << polled.status();
  EXPECT_EQ(polled->size(), 3u);
  auto fetched = store->FetchDue({"2", "3"}, kNow);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->size(), 2u);
  WriteBatch batch;
  batch.now = kNow;
  batch.postpones = {{"1", kNow + 5}, {"2", kNow + 5}};
  batch.ack_groups = {{"3"}};
  auto written = store->Write(batch);
  ASSERT_TRUE(written.ok()) << written.status();
  // Acked at kNow: older than kNow + 1.
  auto purged = store->Purge(kNow + 1, 500);
  ASSERT_TRUE(purged.ok()) << purged.status();
  EXPECT_EQ(*purged, 1);
  const std::string cols =
      "SELECT `priority`, `time_next`, `epoch`, `id`, `message` FROM "
      "`msgq`.`q` WHERE ";
  const std::string unacked =
      " AND `time_acked` IS NULL AND `time_next` IS NOT NULL";
  EXPECT_THAT(
      StopLog("q"),
      ElementsAre(
          cols + "`time_acked` IS NULL AND `time_next` <= " + kDbNow +
              " ORDER BY `priority`, `time_next`, `id` LIMIT 10",
          cols + "`id` IN (2,3) AND `time_acked` IS NULL AND `time_next` <= " +
              kDbNow,
          "UPDATE `msgq`.`q` FORCE INDEX (PRIMARY) "
          "SET `time_next` = 1800000000000000005, `epoch` = "
          "IFNULL(`epoch`, 0) + 1 WHERE `id` IN (1,2)" +
              unacked,
          "UPDATE `msgq`.`q` FORCE INDEX (PRIMARY) "
          "SET `time_acked` = 1800000000000000000, "
          "`time_next` = NULL WHERE `id` IN (3)" +
              unacked,
          "DELETE FROM `msgq`.`q` WHERE `time_acked` < 1800000000000000001 "
          "LIMIT 500"));
}

// A refill poll lists the due ids from poller_idx alone (no row read),
// in the poll's order; tables whose poll is not that plain SELECT
// (msgq_order_by, msgq_fair_by) keep the one-statement poll.
// A row whose large columns hold more than max_row_bytes comes without
// them (NULL, and its size in unread_bytes); a read keeps rows until their
// bytes reach max_read_bytes and reads no further, on a connection it then
// replaces.
TEST_F(StoreStatementsTest, ReadsLeaveOutTooLargeRowsAndStopAtTheirBytes) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  for (int id : {1, 2, 3, 4, 5}) {
    ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
        "INSERT INTO msgq.q (id, message) VALUES (", id,
        ", CONCAT('\"', REPEAT('a', ", id == 3 ? 5000 : 1000, "), '\"'))")));
  }
  auto store = Store("q", {.max_row_bytes = 2000, .max_read_bytes = 2500});
  ASSERT_NE(store, nullptr);
  auto polled = store->PollDue(kNow, 10);
  ASSERT_TRUE(polled.ok()) << polled.status();
  std::vector<std::string> ids;
  for (const Message& m : *polled) ids.push_back(m.id);
  // 1, 2 and 4 take 1,000-odd bytes each (the third reaches 2,500), 3 only
  // its small columns: 5 is not read.
  EXPECT_THAT(ids, ElementsAre("1", "2", "3", "4"));
  ASSERT_EQ(polled->size(), 4u);
  const Message& large = (*polled)[2];
  EXPECT_EQ(large.unread_bytes, 5002u);
  ASSERT_NE(large.row, nullptr);
  EXPECT_EQ(large.row->lengths.at(1), -1);  // message, left out
  EXPECT_EQ((*polled)[0].unread_bytes, 0u);
  EXPECT_EQ((*polled)[0].row->lengths.at(1), 1002);
  // The next statement runs on a new connection and reads 5 whole.
  auto fetched = store->FetchDue({"5"}, kNow);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  ASSERT_EQ(fetched->size(), 1u);
  EXPECT_EQ((*fetched)[0].row->lengths.at(1), 1002);
}

TEST_F(StoreStatementsTest, PollOfIdsReadsTheIndexOnly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  ASSERT_NO_FATAL_FAILURE(Exec("UPDATE msgq.q SET priority = 60 WHERE id = 2"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.q SET time_acked = 1, time_next = NULL WHERE id = 4"));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->polls_ids());
  ASSERT_NO_FATAL_FAILURE(StartLog());
  auto ids = store->PollDueIds(kNow, 3);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre("1", "3", "5"));
  const std::string sql =
      "SELECT `id` FROM `msgq`.`q` WHERE `time_acked` IS NULL AND "
      "`time_next` <= " +
      kDbNow + " ORDER BY `priority`, `time_next`, `id` LIMIT 3";
  EXPECT_THAT(StopLog("q"), ElementsAre(sql));
  auto plan = db_->Query("EXPLAIN " + sql);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->rows.size(), 1u);
  ASSERT_EQ(plan->columns.size(), 10u);
  EXPECT_EQ(plan->rows[0][5].value_or(""), "poller_idx");  // key
  EXPECT_THAT(plan->rows[0][9].value_or(""),               // Extra
              ::testing::HasSubstr("Using index"));

  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "o", "msgq_order_by=order_key",
      "order_key bigint, INDEX order_idx (order_key, time_acked, id)"));
  auto ordered = Store("o");
  ASSERT_NE(ordered, nullptr);
  EXPECT_FALSE(ordered->polls_ids());
  EXPECT_EQ(ordered->PollDueIds(kNow, 3).status().code(),
            absl::StatusCode::kUnimplemented);
}

// The next-due query probes poller_idx a priority at a time (a MIN with
// constant key parts: one index dive each, by rule, whatever the table's
// statistics say), and reads no other index entry: 2,000 unacked rows
// scheduled later, no ANALYZE TABLE.
TEST_F(StoreStatementsTest, NextDueProbesOnePriorityAtATime) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2000));
  // An hour ahead of MariaDB's clock, which the statements compare with.
  int64_t later = 0;
  ASSERT_TRUE(absl::SimpleAtoi(db_->Scalar("SELECT " + kDbNow), &later));
  later += int64_t{3600} * 1'000'000'000;
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "UPDATE msgq.q SET priority = id % 3 * 4 + 1, time_next = ", later,
      " + 1000 + id")));
  // Due already (not after now), acked, and dead rows do not count.
  ASSERT_NO_FATAL_FAILURE(Exec("UPDATE msgq.q SET time_next = 0 WHERE id = 7"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.q SET time_acked = 1, time_next = NULL WHERE id = 8"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.q SET time_next = NULL, priority = 0 WHERE id = 9"));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);
  auto reads = [&] {
    return std::stoll(db_->Scalar(
               "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
               "WHERE VARIABLE_NAME = 'HANDLER_READ_NEXT'")) +
           std::stoll(db_->Scalar(
               "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
               "WHERE VARIABLE_NAME = 'HANDLER_READ_KEY'"));
  };
  ASSERT_NO_FATAL_FAILURE(StartLog());
  const int64_t before = reads();
  auto due = store->NextDueAfter(kNow);
  const int64_t read = reads() - before;
  ASSERT_TRUE(due.ok()) << due.status();
  // Id 1 (priority 5) at later + 1001 is the earliest left.
  EXPECT_EQ(*due, later + 1001);
  const std::string unacked = "FROM `msgq`.`q` WHERE `time_acked` IS NULL";
  auto step = [&](int p) {
    return absl::StrCat("SELECT (SELECT MIN(`time_next`) ", unacked,
                        " AND `priority` = ", p, " AND `time_next` > ", kDbNow,
                        "), (SELECT MIN(`priority`) ", unacked,
                        " AND `priority` > ", p, ")");
  };
  EXPECT_THAT(StopLog("q"), ElementsAre("SELECT MIN(`priority`) " + unacked,
                                        step(0), step(1), step(5), step(9)));
  // 9 MINs, one index dive each (the two status reads add none of these).
  EXPECT_EQ(read, 9);
}

// Text ids reach SQL only as hex literals of the id's bytes, whatever they
// hold (a quote, a backslash, SQL).
TEST_F(StoreStatementsTest, TextIdsAreHexLiterals) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrReplaceAll(
      MessageTableDdl("t", MessageComment()),
      {{"id bigint NOT NULL", "id varchar(100) NOT NULL"}})));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.t (id, message) VALUES ('a''b', '{}'), "
           "('c\\\\d', '{}'), ('0) OR (1=1', '{}')"));
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(StartLog());
  auto fetched = store->FetchDue({"a'b", "c\\d"}, kNow);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->size(), 2u);
  WriteBatch batch;
  batch.now = kNow;
  batch.postpones = {{"a'b", kNow + 5}};
  batch.ack_groups = {{"0) OR (1=1", "c\\d"}};
  auto written = store->Write(batch);
  ASSERT_TRUE(written.ok()) << written.status();
  const std::string unacked =
      " AND `time_acked` IS NULL AND `time_next` IS NOT NULL";
  EXPECT_THAT(
      StopLog("t"),
      ElementsAre(
          "SELECT `priority`, `time_next`, `epoch`, `id`, `message` FROM "
          "`msgq`.`t` WHERE `id` IN (_utf8mb4 X'612762',_utf8mb4 X'635C64') "
          "AND `time_acked` IS NULL AND `time_next` <= " +
              kDbNow,
          "UPDATE `msgq`.`t` FORCE INDEX (PRIMARY) "
          "SET `time_next` = 1800000000000000005, `epoch` = "
          "IFNULL(`epoch`, 0) + 1 WHERE `id` IN (_utf8mb4 X'612762')" +
              unacked,
          "UPDATE `msgq`.`t` FORCE INDEX (PRIMARY) "
          "SET `time_acked` = 1800000000000000000, "
          "`time_next` = NULL WHERE `id` IN (_utf8mb4 "
          "X'3029204F522028313D31',_utf8mb4 X'635C64')" +
              unacked));
  EXPECT_EQ(db_->Scalar("SELECT GROUP_CONCAT(id ORDER BY id SEPARATOR '|') "
                        "FROM msgq.t WHERE time_acked IS NOT NULL"),
            "0) OR (1=1|c\\d");
  EXPECT_EQ(db_->Scalar("SELECT time_next FROM msgq.t WHERE id = 'a''b'"),
            absl::StrCat(kNow + 5));
}

// A row sent from its binlog row image may be postponed or acked while the
// INSERT that made it is still committing (MariaDB hands a transaction to
// binlog readers before InnoDB commits it). The settling UPDATEs wait for
// it instead of skipping the row: before they did, a small table (scanned)
// or a primary key of (id, time_created) left the row due, and the next
// poll sent it again inside its ack wait. Three key shapes: the id alone
// (q: single-table UPDATEs by whole key), (id, time_created) (p) and no
// primary key but a UNIQUE NOT NULL id (u: no PRIMARY index to name).
TEST_F(StoreStatementsTest, SettlingWritesWaitForARowStillCommitting) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl("q", MessageComment())));
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrReplaceAll(
      MessageTableDdl("p", MessageComment(),
                      "time_created bigint NOT NULL DEFAULT 0"),
      {{"PRIMARY KEY (id)", "PRIMARY KEY (id, time_created)"}})));
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrReplaceAll(MessageTableDdl("u", MessageComment()),
                               {{"PRIMARY KEY (id)", "UNIQUE KEY (id)"}})));
  for (const std::string table : {"q", "p", "u"}) {
    SCOPED_TRACE(table);
    ASSERT_NO_FATAL_FAILURE(InsertRange(table, 10, 11));
    auto store = Store(table);
    ASSERT_NE(store, nullptr);
    auto producer = db_->Connect();
    ASSERT_TRUE(producer.ok()) << producer.status();
    ASSERT_TRUE((*producer)->Execute("BEGIN").ok());
    ASSERT_TRUE((*producer)
                    ->Execute(absl::StrCat("INSERT INTO msgq.`", table,
                                           "` (id, message) VALUES (1, "
                                           "'{}'), (2, '{}')"))
                    .ok());
    // The producer commits once the store's UPDATE waits on its rows (or
    // after 10 s if it never does: a skipping UPDATE returns at once and
    // the checks below fail).
    absl::Status committed;
    std::thread commit([&] {
      Eventually(
          [&] {
            return db_->Scalar(
                       "SELECT COUNT(*) FROM "
                       "information_schema.PROCESSLIST WHERE INFO "
                       "LIKE 'UPDATE `msgq`.%'") == "1";
          },
          absl::Seconds(10));
      committed = (*producer)->Execute("COMMIT").status();
    });
    WriteBatch batch;
    batch.now = kNow;
    batch.postpones = {{"1", kNow + 5}};
    batch.ack_groups = {{"2"}};
    auto written = store->Write(batch);
    commit.join();
    ASSERT_TRUE(committed.ok()) << committed;
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_TRUE(written->postpones.ok()) << written->postpones;
    ASSERT_EQ(written->acks.size(), 1u);
    ASSERT_TRUE(written->acks[0].ok()) << written->acks[0].status();
    EXPECT_EQ(*written->acks[0], 1);
    EXPECT_EQ(db_->Scalar(absl::StrCat("SELECT CONCAT(time_next, ' ', epoch) "
                                       "FROM msgq.`",
                                       table, "` WHERE id = 1")),
              absl::StrCat(kNow + 5, " 1"));
    EXPECT_EQ(db_->Scalar(absl::StrCat(
                  "SELECT CONCAT(time_acked, ' ', IFNULL(time_next, 'NULL')) "
                  "FROM msgq.`",
                  table, "` WHERE id = 2")),
              absl::StrCat(kNow, " NULL"));
  }
}

// Row lock waits of the whole server so far (SHOW GLOBAL STATUS).
int64_t RowLockWaits(PrivateMariaDb& db) {
  auto r = db.Query("SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_waits'");
  int64_t n = -1;
  if (!r.ok() || r->rows.size() != 1 ||
      !absl::SimpleAtoi(r->rows[0][1].value_or(""), &n)) {
    ADD_FAILURE() << "no Innodb_row_lock_waits";
  }
  return n;
}

// An application holds rows 1 and 2 with SELECT ... FOR UPDATE (by the
// primary key: on a table this small the optimizer would otherwise scan
// poller_idx and lock every row). A Write
// that names them waits once, for the session's lock wait (1 s), then
// writes everything else and reports the two as locked; a Write that
// expects locked rows looks first and waits for none; once the rows are
// released their writes apply.
TEST_F(StoreStatementsTest, WritesLeaveOutRowsAnotherTransactionLocks) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 6));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);
  auto app = db_->Connect();
  ASSERT_TRUE(app.ok()) << app.status();
  ASSERT_TRUE((*app)->Execute("BEGIN").ok());
  auto held = (*app)->Query(
      "SELECT id FROM msgq.q FORCE INDEX (PRIMARY) WHERE id IN (1, 2) FOR "
      "UPDATE");
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_EQ(held->rows.size(), 2u);

  WriteBatch batch;
  batch.now = kNow;
  batch.postpones = {{"1", kNow + 5}, {"3", kNow + 5}};
  batch.ack_groups = {{"2", "4"}, {"5"}};
  // A nack of a locked row fails alone; one of a free row applies.
  batch.nack_groups = {{{{"1", 0, kNow + 9}}, "boom"},
                       {{{"6", -1, kNow + 9}}, ""}};
  const int64_t waits = RowLockWaits(*db_);
  const absl::Time start = absl::Now();
  auto written = store->Write(batch);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(written->locked, ElementsAre("1", "2"));
  EXPECT_TRUE(written->postpones.ok()) << written->postpones;
  ASSERT_EQ(written->acks.size(), 2u);
  ASSERT_TRUE(written->acks[0].ok()) << written->acks[0].status();
  EXPECT_EQ(*written->acks[0], 1);  // 4; 2 is locked
  ASSERT_TRUE(written->acks[1].ok()) << written->acks[1].status();
  EXPECT_EQ(*written->acks[1], 1);
  ASSERT_EQ(written->nacks.size(), 2u);
  EXPECT_EQ(written->nacks[0].status().code(), absl::StatusCode::kAborted)
      << written->nacks[0].status();
  ASSERT_TRUE(written->nacks[1].ok()) << written->nacks[1].status();
  EXPECT_EQ(written->nacks[1]->retried, 1);
  // One wait: the first statement's, cut short by the session's timeout.
  EXPECT_EQ(RowLockWaits(*db_), waits + 1);
  EXPECT_GE(took, absl::Seconds(MysqlMessageStore::kLockWaitSeconds));
  EXPECT_EQ(
      db_->Scalar("SELECT GROUP_CONCAT(CONCAT(id, ':', epoch, ':', "
                  "IFNULL(time_acked, 'u')) ORDER BY id) FROM msgq.q"),
      absl::StrCat("1:0:u,2:0:u,3:1:u,4:0:", kNow, ",5:0:", kNow, ",6:0:u"));
  EXPECT_EQ(db_->Scalar("SELECT time_next FROM msgq.q WHERE id = 6"),
            absl::StrCat(kNow + 9));

  // The caller writes the locked rows again, expecting them locked: the
  // store looks first and waits for nothing.
  WriteBatch again;
  again.now = kNow + 1;
  again.postpones = {{"1", kNow + 6}};
  again.ack_groups = {{"2"}};
  again.expect_locked = true;
  written = store->Write(again);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(written->locked, ElementsAre("1", "2"));
  ASSERT_EQ(written->acks.size(), 1u);
  EXPECT_EQ(*written->acks[0], 0);
  EXPECT_EQ(RowLockWaits(*db_), waits + 1);

  ASSERT_TRUE((*app)->Execute("ROLLBACK").ok());
  written = store->Write(again);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(written->locked, IsEmpty());
  EXPECT_EQ(*written->acks[0], 1);
  EXPECT_EQ(RowLockWaits(*db_), waits + 1);
  EXPECT_EQ(db_->Scalar("SELECT GROUP_CONCAT(CONCAT(id, ':', epoch, ':', "
                        "IFNULL(time_acked, 'u')) ORDER BY id) FROM msgq.q "
                        "WHERE id <= 2"),
            absl::StrCat("1:1:u,2:0:", kNow + 1));
}

}  // namespace
}  // namespace msgq::testing
