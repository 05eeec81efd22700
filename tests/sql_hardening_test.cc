// SQL hardening against a real MariaDB and a real msgqd: ids of a text id
// column, session settings the server does not give us, and a statement that
// fails on its own.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/sql_literal.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tests/log_wait.h"

namespace msgq::testing {
namespace {

using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

class SqlHardeningTest : public MsgqTest {
 protected:
  // A message table like MessageTableDdl's, with a varchar id.
  void CreateTextIdTable(const std::string& name,
                         const std::string& overrides = "") {
    Exec("USE msgq");
    Exec(absl::StrReplaceAll(
        MessageTableDdl(name, MessageComment(overrides)),
        {{"id bigint NOT NULL", "id varchar(700) NOT NULL"}}));
  }

  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }
};

// "7", "07" and "+7" read as the same integer; in a varchar id column they
// are three rows, and all three must be delivered.
TEST_F(SqlHardeningTest, TextIdsThatReadAsTheSameIntegerAreAllDelivered) {
  CreateTextIdTable("t");
  StartServer();
  StreamCollector s(stub_.get(), "t");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  Exec(
      "INSERT INTO msgq.t (id, message) VALUES ('7', '{}'), ('07', '{}'), "
      "('+7', '{}')");
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(10)))
      << ::testing::PrintToString(s.ids());
  EXPECT_THAT(s.ids(), UnorderedElementsAre("7", "07", "+7"));
  int64_t acked = 0;
  ASSERT_TRUE(AckIds(stub_.get(), "t", {"7", "07", "+7"}, &acked).ok());
  EXPECT_EQ(acked, 3);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t WHERE time_acked IS NULL"), 0);
}

// The id kind is recorded at load; after ALTER TABLE turns an integer id
// into a varchar, and before the next reload, a row id such as "id) OR (1=1"
// must be rejected where it is written: written into the postpone unescaped,
// it would postpone every unacked row of the table.
TEST_F(SqlHardeningTest, AnIdThatIsNoLongerAnIntegerNeverReachesSql) {
  CreateTable("q", "vt_poller_interval=0.2");  // bigint id
  // Without the binlog the ALTER is not followed at once (with it, the
  // table is reloaded as soon as the ALTER is seen), so the window stays
  // open until the next reload, an hour away.
  StartServer({"--schema_reload_interval=1h", "--binlog=false"});
  const int64_t later = NowNanos() + int64_t{3600} * 1000 * 1000 * 1000;
  Exec(absl::StrCat("INSERT INTO msgq.q (id, time_next, message) VALUES (1, ",
                    later, ", '{}')"));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  Exec("ALTER TABLE msgq.q MODIFY id varchar(100) NOT NULL");
  Exec("INSERT INTO msgq.q (id, message) VALUES ('id) OR (1=1', '{}')");
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  EXPECT_EQ(s.ids()[0], "id) OR (1=1");
  // The postpone of what was sent follows at once; its id is refused.
  EXPECT_TRUE(LogShows(*server_,
                       "id) OR (1=1\" (11 bytes) is not a valid "
                       "id",
                       absl::Seconds(5)))
      << server_->Log();
  EXPECT_EQ(Int("SELECT epoch FROM msgq.q WHERE id = '1'"), 0);
  EXPECT_EQ(Int("SELECT time_next FROM msgq.q WHERE id = '1'"), later);
}

// Text ids are written as _utf8mb4 X'..' literals. The primary key must
// still serve `id IN (...)`, whatever the column's charset and collation.
TEST_F(SqlHardeningTest, HexTextLiteralsStillUseThePrimaryKey) {
  Exec("USE msgq");
  for (const char* charset :
       {"utf8mb4 COLLATE utf8mb4_unicode_ci", "utf8mb4 COLLATE utf8mb4_bin",
        "latin1", "ascii COLLATE ascii_bin", "utf8mb3"}) {
    SCOPED_TRACE(charset);
    Exec("DROP TABLE IF EXISTS k");
    Exec(absl::StrCat("CREATE TABLE k (id varchar(100) CHARACTER SET ", charset,
                      " NOT NULL PRIMARY KEY, v int)"));
    std::string values;
    for (int i = 0; i < 2000; ++i) {
      absl::StrAppend(&values, i > 0 ? "," : "", "('id-", i, "', ", i, ")");
    }
    Exec("INSERT INTO k VALUES " + values);
    Exec("ANALYZE TABLE k");
    std::string in;
    for (const char* id : {"id-7", "id-1500", "id-42", "missing"}) {
      if (!in.empty()) in += ",";
      absl::StatusOr<std::string> literal = IdLiteral(IdKind::kText, id);
      ASSERT_TRUE(literal.ok());
      in += *literal;
    }
    const std::string select = "SELECT v FROM k WHERE id IN (" + in + ")";
    auto explain = db_->Query("EXPLAIN " + select);
    ASSERT_TRUE(explain.ok()) << explain.status();
    ASSERT_EQ(explain->rows.size(), 1u);
    int key_col = -1, type_col = -1;
    for (size_t i = 0; i < explain->columns.size(); ++i) {
      if (explain->columns[i] == "key") key_col = static_cast<int>(i);
      if (explain->columns[i] == "type") type_col = static_cast<int>(i);
    }
    ASSERT_GE(key_col, 0);
    ASSERT_GE(type_col, 0);
    EXPECT_EQ(explain->rows[0][key_col].value_or(""), "PRIMARY");
    EXPECT_EQ(explain->rows[0][type_col].value_or(""), "range");
    auto rows = db_->Query(select + " ORDER BY v");
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->rows.size(), 3u);
    EXPECT_EQ(rows->rows[0][0].value_or(""), "7");
    EXPECT_EQ(rows->rows[2][0].value_or(""), "1500");
  }
}

// msgqd sets its own session (autocommit on, READ COMMITTED) and writes
// literals that do not depend on sql_mode: with the global settings of a
// server that says otherwise, msgqd's statements would stay in transactions
// that never end, holding locks that make producers' INSERTs time out.
TEST_F(SqlHardeningTest, HostileGlobalSessionSettingsStallNothing) {
  CreateTextIdTable("t", "vt_poller_interval=0.2");
  Exec("SET GLOBAL autocommit = 0");
  Exec("SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  Exec("SET GLOBAL sql_mode = 'NO_BACKSLASH_ESCAPES,ANSI_QUOTES'");
  {
    auto conn = db_->Connect();  // sets its session up like msgqd's
    ASSERT_TRUE(conn.ok()) << conn.status();
    auto r = (*conn)->Query("SELECT @@autocommit, @@tx_isolation");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->rows[0][0].value_or(""), "1");
    EXPECT_EQ(r->rows[0][1].value_or(""), "READ-COMMITTED");
    EXPECT_EQ((*conn)->isolation_level(), "READ COMMITTED");
    EXPECT_EQ((*conn)->max_allowed_packet(),
              Int("SELECT @@global.max_allowed_packet"));
  }
  StartServer();
  // The producer: this fixture's connection predates the SET GLOBALs, so it
  // has autocommit on; it gives up on a lock after 2 s.
  Exec("SET SESSION innodb_lock_wait_timeout = 2");
  StreamCollector s(stub_.get(), "t");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  Exec(
      "INSERT INTO msgq.t (id, message) VALUES ('a''b\\\\c', '{}'), ('m', "
      "'{}')");
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(10)));
  EXPECT_THAT(s.ids(), UnorderedElementsAre("a'b\\c", "m"));
  int64_t acked = 0;
  // "zz" does not exist: an ack of it must not keep a gap lock that blocks
  // the INSERTs below.
  ASSERT_TRUE(AckIds(stub_.get(), "t", {"a'b\\c", "m", "zz"}, &acked).ok());
  EXPECT_EQ(acked, 2);
  Exec("INSERT INTO msgq.t (id, message) VALUES ('n', '{}'), ('zzz', '{}')");
  ASSERT_TRUE(s.WaitForRows(4, absl::Seconds(10)));
  ASSERT_TRUE(AckIds(stub_.get(), "t", {"n", "zzz"}, &acked).ok());
  EXPECT_EQ(acked, 2);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t WHERE time_acked IS NULL"), 0);
  Exec("INSERT INTO msgq.t (id, message) VALUES ('zzzz', '{}')");
  ASSERT_TRUE(s.WaitForRows(5, absl::Seconds(10)));
}

// Acks of all clients go out in one transaction. An ack whose statement
// cannot be sent (an id longer than max_allowed_packet allows) or that the
// server refuses (a trigger) fails alone and the others commit; it does not
// fail every ack of its round.
TEST_F(SqlHardeningTest, OneFailingAckGroupDoesNotFailTheOthers) {
  CreateTextIdTable("t");
  Exec(
      "CREATE TRIGGER msgq.poison BEFORE UPDATE ON msgq.t FOR EACH ROW "
      "BEGIN IF NEW.id = 'poison' AND NEW.time_acked IS NOT NULL THEN "
      "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned'; END IF; END");
  Exec(
      "INSERT INTO msgq.t (id, message) VALUES ('blocker', '{}'), ('a', '{}'), "
      "('poison', '{}')");
  Exec("SET GLOBAL max_allowed_packet = 4096");
  StartServer();
  // Hold the blocker row so that msgqd's first ack waits on it while the
  // three acks under test queue up for the next round.
  auto holder = db_->Connect();
  ASSERT_TRUE(holder.ok()) << holder.status();
  ASSERT_TRUE((*holder)->Execute("BEGIN").ok());
  ASSERT_TRUE(
      (*holder)
          ->Query("SELECT id FROM msgq.t WHERE id = 'blocker' FOR UPDATE")
          .ok());
  grpc::Status blocker_status;
  std::thread blocker([&] {
    int64_t n = 0;
    blocker_status = AckIds(stub_.get(), "t", {"blocker"}, &n);
  });
  ASSERT_TRUE(Eventually(
      [&] {
        return Int("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                   "WHERE COMMAND = 'Query' AND "
                   "INFO LIKE 'UPDATE %SET `time_acked`%'") == 1;
      },
      absl::Seconds(10)))
      << server_->Log();
  const std::string too_long(5000, 'x');  // 10000 bytes of hex
  struct Call {
    std::vector<std::string> ids;
    grpc::Status status;
    int64_t acked = -1;
  };
  // The first group is split into several statements to fit the packet.
  std::vector<std::string> many = {"a"};
  for (int i = 0; i < 1000; ++i) many.push_back(absl::StrCat("missing-", i));
  std::vector<Call> calls = {{many}, {{too_long}}, {{"poison"}}};
  std::vector<std::thread> threads;
  for (Call& c : calls) {
    threads.emplace_back(
        [&] { c.status = AckIds(stub_.get(), "t", c.ids, &c.acked); });
  }
  absl::SleepFor(absl::Milliseconds(500));  // no signal for "queued"
  ASSERT_TRUE((*holder)->Execute("ROLLBACK").ok());
  blocker.join();
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(blocker_status.ok()) << blocker_status.error_message();
  EXPECT_TRUE(calls[0].status.ok()) << calls[0].status.error_message();
  EXPECT_EQ(calls[0].acked, 1);
  EXPECT_EQ(calls[1].status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << calls[1].status.error_message();
  EXPECT_EQ(calls[2].status.error_code(), grpc::StatusCode::INTERNAL)
      << calls[2].status.error_message();
  EXPECT_THAT(calls[2].status.error_message(),
              ::testing::HasSubstr("poisoned"));
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t WHERE time_acked IS NULL"), 1);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t WHERE time_acked IS NULL AND "
                "id = 'poison'"),
            1);
  // MySQL was never taken for unreachable: the next ack goes straight in.
  int64_t acked = -1;
  grpc::Status again = AckIds(stub_.get(), "t", {"nothing"}, &acked);
  EXPECT_TRUE(again.ok()) << again.error_message();
}

// Only a lost connection is UNAVAILABLE; a statement over max_allowed_packet
// and other client-side errors are permanent.
TEST(MysqlErrorClassTest, OnlyConnectionLossAndReadOnlyAreUnavailable) {
  struct Case {
    unsigned int code;
    absl::StatusCode status;
    bool drop;
  };
  for (const Case& c : std::vector<Case>{
           {2002, absl::StatusCode::kUnavailable, true},  // CONNECTION_ERROR
           {2003, absl::StatusCode::kUnavailable, true},  // CONN_HOST_ERROR
           {2006, absl::StatusCode::kUnavailable, true},  // SERVER_GONE
           {2013, absl::StatusCode::kUnavailable, true},  // SERVER_LOST
           {1927, absl::StatusCode::kUnavailable, true},  // CONNECTION_KILLED
           {1053, absl::StatusCode::kUnavailable, true},  // SERVER_SHUTDOWN
           {1040, absl::StatusCode::kUnavailable, true},  // too many conns
           {1290, absl::StatusCode::kUnavailable, true},  // --read-only
           {1836, absl::StatusCode::kUnavailable, true},  // read-only mode
           {1153, absl::StatusCode::kInvalidArgument, true},   // packet > max
           {2020, absl::StatusCode::kInvalidArgument, false},  // client-side
           {2014, absl::StatusCode::kInternal, true},  // commands out of sync
           {2027, absl::StatusCode::kInternal, true},  // malformed packet
           {1205, absl::StatusCode::kAborted, false},  // lock wait timeout
           {1213, absl::StatusCode::kAborted, false},  // deadlock
           {1317, absl::StatusCode::kAborted, false},  // query interrupted
           {1146, absl::StatusCode::kNotFound, false},
           {1142, absl::StatusCode::kPermissionDenied, false},
           {1644, absl::StatusCode::kInternal, false},  // SIGNAL
           {1064, absl::StatusCode::kInternal, false},  // syntax
       }) {
    const MysqlErrorClass got = ClassifyMysqlError(c.code);
    EXPECT_EQ(got.code, c.status) << c.code;
    EXPECT_EQ(got.drop_connection, c.drop) << c.code;
  }
}

TEST(StatementLimitTest, LeavesAMarginAndCaps) {
  EXPECT_EQ(StatementLimit(1024), 960u);
  EXPECT_EQ(StatementLimit(4096), 3840u);
  EXPECT_EQ(StatementLimit(65536), 65536u - 1024u);
  EXPECT_EQ(StatementLimit(int64_t{1} << 30), size_t{4} << 20);
}

}  // namespace
}  // namespace msgq::testing
