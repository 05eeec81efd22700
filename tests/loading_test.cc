// Loading message tables: directives, failures isolated per table, status
// codes, schema reload, the schema/ DDL and its index; msgqd shutdown.
#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "engine/message_table.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/next_due_statements.h"
#include "engine/sql/schema_loader.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LoadingTest : public MsgqTest {};

TEST_F(LoadingTest, LoadsTableWithExactSettings) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("jobs",
                  "vt_ack_wait=2.5,vt_purge_after=3600,vt_batch_size=7,"
                  "vt_cache_size=123,vt_poller_interval=0.5,vt_min_backoff=1,"
                  "vt_max_backoff=60,vt_message_cols=id|message"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::TableStatus t = FindTable(stub_.get(), "jobs");
  EXPECT_TRUE(t.loaded());
  EXPECT_EQ(t.error(), "");
  EXPECT_EQ(t.settings().ack_wait(), 2.5);
  EXPECT_EQ(t.settings().purge_after(), 3600);
  EXPECT_EQ(t.settings().batch_size(), 7);
  EXPECT_EQ(t.settings().cache_size(), 123);
  EXPECT_EQ(t.settings().poller_interval(), 0.5);
  EXPECT_EQ(t.settings().min_backoff(), 1);
  EXPECT_EQ(t.settings().max_backoff(), 60);
  EXPECT_THAT(t.settings().message_cols(),
              ::testing::ElementsAre("id", "message"));
  EXPECT_EQ(t.subscribers(), 0);
}

TEST_F(LoadingTest, SchemaDirectoryDdlLoads) {
  std::ifstream in(std::string(MSGQ_SOURCE_DIR) + "/schema/message_table.sql");
  std::stringstream ddl;
  ddl << in.rdbuf();
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(ddl.str()));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::TableStatus t = FindTable(stub_.get(), "demo");
  EXPECT_TRUE(t.loaded()) << t.error();
  EXPECT_EQ(t.settings().ack_wait(), 30);
  EXPECT_EQ(t.settings().batch_size(), 10);
}

struct BadTable {
  std::string name;
  std::string ddl;
  std::string cause;  // expected in the error
};

TEST_F(LoadingTest, BadTablesFailAloneWithPreciseErrors) {
  const std::string all =
      "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30";
  std::vector<BadTable> bad = {
      {"no_ack_wait",
       MessageTableDdl("no_ack_wait",
                       "vitess_message,vt_purge_after=86400,vt_batch_size=10,"
                       "vt_cache_size=10000,vt_poller_interval=30"),
       "vt_ack_wait"},
      {"not_number", MessageTableDdl("not_number", all + ",vt_min_backoff=abc"),
       "vt_min_backoff"},
      {"zero_batch",
       MessageTableDdl("zero_batch", MessageComment("vt_batch_size=0")),
       "vt_batch_size"},
      {"negative",
       MessageTableDdl("negative", MessageComment("vt_ack_wait=-1")),
       "vt_ack_wait"},
      {"min_over_max",
       MessageTableDdl("min_over_max",
                       all + ",vt_min_backoff=10,vt_max_backoff=5"),
       "vt_max_backoff"},
      {"typo", MessageTableDdl("typo", all + ",vt_ack_wiat=3"), "vt_ack_wiat"},
      {"cols_not_id_first",
       MessageTableDdl("cols_not_id_first",
                       all + ",vt_message_cols=message|id"),
       "vt_message_cols"},
      {"cols_missing",
       MessageTableDdl("cols_missing", all + ",vt_message_cols=id|nope"),
       "nope"},
      {"no_epoch",
       "CREATE TABLE no_epoch (id bigint PRIMARY KEY, priority tinyint NOT "
       "NULL DEFAULT 50, time_next bigint DEFAULT 0, time_acked bigint) "
       "COMMENT '" +
           all + "'",
       "missing required column epoch"},
      // Enqueues could not share the application's transaction, nor could
      // msgqd's own writes roll back.
      {"myisam", MessageTableDdl("myisam", all) + " ENGINE=MyISAM",
       "its engine MyISAM has no transactions"},
  };
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  for (const BadTable& b : bad) ASSERT_NO_FATAL_FAILURE(Exec(b.ddl));
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("good", 1, 3));
  ASSERT_NO_FATAL_FAILURE(StartServer());

  for (const BadTable& b : bad) {
    SCOPED_TRACE(b.name);
    v1::TableStatus t = FindTable(stub_.get(), b.name);
    EXPECT_EQ(t.name(), b.name);
    EXPECT_FALSE(t.loaded());
    EXPECT_THAT(t.error(), HasSubstr(absl::StrCat("`msgq`.`", b.name, "`")));
    EXPECT_THAT(t.error(), HasSubstr(b.cause));

    StreamCollector stream(stub_.get(), b.name);
    ASSERT_TRUE(stream.WaitForEnd(absl::Seconds(10)));
    EXPECT_EQ(stream.status().error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(stream.status().error_message(), t.error());

    int64_t acked = -1;
    grpc::Status ack = AckIds(stub_.get(), b.name, {"1"}, &acked);
    EXPECT_EQ(ack.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(ack.error_message(), t.error());
  }

  // The good table is served as if nothing were wrong.
  StreamCollector good(stub_.get(), "good");
  ASSERT_TRUE(good.WaitForRows(3, absl::Seconds(10)));
  EXPECT_THAT(good.ids(), ::testing::ElementsAre("1", "2", "3"));
  int64_t acked = 0;
  EXPECT_TRUE(AckIds(stub_.get(), "good", {"1", "2", "3"}, &acked).ok());
  EXPECT_EQ(acked, 3);
}

TEST_F(LoadingTest, StatusCodesForBadRequests) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE TABLE msgq.plain (id bigint PRIMARY KEY)"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  struct Case {
    std::string keyspace, name;
    grpc::StatusCode code;
  };
  std::vector<Case> cases = {
      {"", "nosuch", grpc::StatusCode::NOT_FOUND},
      {"otherdb", "good", grpc::StatusCode::NOT_FOUND},
      {"", "plain", grpc::StatusCode::NOT_FOUND},
      {"", "", grpc::StatusCode::INVALID_ARGUMENT},
      {"", "good`; DROP TABLE good; --", grpc::StatusCode::NOT_FOUND},
      {"", "x' OR '1'='1", grpc::StatusCode::NOT_FOUND},
      {"msgq`", "good", grpc::StatusCode::NOT_FOUND},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.keyspace + "/" + c.name);
    StreamCollector stream(stub_.get(), c.name, c.keyspace);
    ASSERT_TRUE(stream.WaitForEnd(absl::Seconds(10)));
    EXPECT_EQ(stream.status().error_code(), c.code);
    grpc::Status ack = AckIds(stub_.get(), c.name, {"1"}, nullptr, c.keyspace);
    EXPECT_EQ(ack.error_code(), c.code);
  }
  grpc::Status malformed = AckIds(stub_.get(), "good", {"1", "abc"}, nullptr);
  EXPECT_EQ(malformed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(malformed.error_message(), HasSubstr("abc"));
  // The explicit keyspace works like the default one.
  int64_t acked = -1;
  EXPECT_TRUE(AckIds(stub_.get(), "good", {"1"}, &acked, "msgq").ok());
  EXPECT_EQ(acked, 0);
  // Nothing was dropped by the odd names.
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA='msgq' AND TABLE_NAME NOT IN "
                        "('msgq_leases', 'msgq_instances')"),
            "2");
}

TEST_F(LoadingTest, UnavailableWhileMysqlIsDown) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(FindTable(stub_.get(), "good").loaded());
  ASSERT_TRUE(db_->Stop().ok());
  grpc::Status ack = AckIds(stub_.get(), "good", {"1"}, nullptr);
  EXPECT_EQ(ack.error_code(), grpc::StatusCode::UNAVAILABLE);
  // The server itself keeps serving.
  EXPECT_TRUE(FindTable(stub_.get(), "good").loaded());
  ASSERT_TRUE(db_->Restart().ok());
  ASSERT_NO_FATAL_FAILURE(InsertRange("good", 1, 1));
  EXPECT_TRUE(Eventually(
      [&] {
        int64_t acked = 0;
        return AckIds(stub_.get(), "good", {"1"}, &acked).ok() && acked == 1;
      },
      absl::Seconds(30)));
}

TEST_F(LoadingTest, StartsWithoutMysqlAndLoadsWhenItComes) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("good", 1, 2));
  ASSERT_TRUE(db_->Stop().ok());
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector early(stub_.get(), "good");
  ASSERT_TRUE(early.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(early.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(db_->Restart().ok());
  EXPECT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "good").loaded(); },
                 absl::Seconds(30)));
  StreamCollector stream(stub_.get(), "good");
  EXPECT_TRUE(stream.WaitForRows(2, absl::Seconds(10)));
}

TEST_F(LoadingTest, SchemaReloadAddsChangesFixesAndDrops) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("first"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(FindTable(stub_.get(), "first").loaded());

  // A new table is served.
  ASSERT_NO_FATAL_FAILURE(CreateTable("second", "vt_batch_size=3"));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "second").loaded(); },
                 absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("second", 1, 1));
  StreamCollector second(stub_.get(), "second");
  ASSERT_TRUE(second.WaitForRows(1, absl::Seconds(10)));

  // A changed comment is applied; the table's streams end with UNAVAILABLE.
  ASSERT_NO_FATAL_FAILURE(Exec("ALTER TABLE msgq.second COMMENT '" +
                               MessageComment("vt_batch_size=5") + "'"));
  ASSERT_TRUE(second.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(second.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(FindTable(stub_.get(), "second").settings().batch_size(), 5);

  // Breaking the comment fails the table; fixing it loads it again.
  ASSERT_NO_FATAL_FAILURE(Exec("ALTER TABLE msgq.second COMMENT '" +
                               MessageComment("vt_batch_size=x") + "'"));
  ASSERT_TRUE(
      Eventually([&] { return !FindTable(stub_.get(), "second").loaded(); },
                 absl::Seconds(10)));
  EXPECT_THAT(FindTable(stub_.get(), "second").error(),
              HasSubstr("vt_batch_size"));
  ASSERT_NO_FATAL_FAILURE(Exec("ALTER TABLE msgq.second COMMENT '" +
                               MessageComment("vt_batch_size=4") + "'"));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "second").loaded(); },
                 absl::Seconds(10)));
  EXPECT_EQ(FindTable(stub_.get(), "second").settings().batch_size(), 4);

  // Moving it to an engine without transactions fails it, its streams
  // end; moving it back loads it again.
  StreamCollector moved(stub_.get(), "second");
  ASSERT_TRUE(moved.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(Exec("ALTER TABLE msgq.second ENGINE=MyISAM"));
  ASSERT_TRUE(moved.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(moved.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(
      Eventually([&] { return !FindTable(stub_.get(), "second").loaded(); },
                 absl::Seconds(10)));
  EXPECT_THAT(FindTable(stub_.get(), "second").error(),
              HasSubstr("its engine MyISAM has no transactions"));
  ASSERT_NO_FATAL_FAILURE(Exec("ALTER TABLE msgq.second ENGINE=InnoDB"));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "second").loaded(); },
                 absl::Seconds(10)));

  // A dropped table disappears and its streams end.
  StreamCollector first(stub_.get(), "first");
  ASSERT_TRUE(first.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(Exec("DROP TABLE msgq.first"));
  ASSERT_TRUE(first.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(first.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(FindTable(stub_.get(), "first").name(), "");
  StreamCollector gone(stub_.get(), "first");
  ASSERT_TRUE(gone.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(gone.status().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LoadingTest, PollAndNextDueQueriesUseThePollerIndex) {
  std::ifstream in(std::string(MSGQ_SOURCE_DIR) + "/schema/message_table.sql");
  std::stringstream ddl;
  ddl << in.rdbuf();
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(ddl.str()));
  std::string values;
  for (int i = 1; i <= 2000; ++i) {
    absl::StrAppend(&values, i > 1 ? "," : "", "(", i, ",", i % 7, ",",
                    i % 3 == 0 ? "NULL" : "0", ",", i % 3 == 0 ? "5" : "NULL",
                    ")");
  }
  ASSERT_NO_FATAL_FAILURE(Exec(
      "INSERT INTO msgq.demo (id, priority, time_next, time_acked) VALUES " +
      values));
  ASSERT_NO_FATAL_FAILURE(Exec("ANALYZE TABLE msgq.demo"));
  auto conn = db_->Connect();
  ASSERT_TRUE(conn.ok());
  auto schema = LoadSchema(**conn, {"msgq"});
  ASSERT_TRUE(schema.ok());
  ASSERT_EQ(schema->tables.size(), 1u);
  const TableDefinition& def = schema->tables[0];
  auto table =
      BuildMessageTable(def.keyspace, def.name, def.comment, def.columns);
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore store(*table, db_->mysql_options());
  // As msgqd sends it: due by MariaDB's NOW(6) (sql_literal.h).
  auto explain = db_->Query("EXPLAIN " + store.PollSql(std::nullopt, 1000));
  ASSERT_TRUE(explain.ok()) << explain.status();
  ASSERT_EQ(explain->rows.size(), 1u);
  int key_col = -1, extra_col = -1;
  for (size_t i = 0; i < explain->columns.size(); ++i) {
    if (explain->columns[i] == "key") key_col = static_cast<int>(i);
    if (explain->columns[i] == "Extra") extra_col = static_cast<int>(i);
  }
  ASSERT_GE(key_col, 0);
  ASSERT_GE(extra_col, 0);
  const auto& row = explain->rows[0];
  EXPECT_EQ(row[key_col].value_or(""), "poller_idx");
  EXPECT_THAT(row[extra_col].value_or(""),
              ::testing::Not(HasSubstr("filesort")));

  // The next-due statements read one index entry per MIN, not every row
  // (tests/store_statements_test.cc counts the reads).
  for (const std::string& sql :
       {NextDueFirstSql("`msgq`.`demo`"),
        NextDueStepSql("`msgq`.`demo`", 3, std::nullopt)}) {
    auto next_due = db_->Query("EXPLAIN " + sql);
    ASSERT_TRUE(next_due.ok()) << next_due.status();
    ASSERT_FALSE(next_due->rows.empty());
    for (const auto& plan : next_due->rows) {
      EXPECT_THAT(plan[extra_col].value_or(""),
                  ::testing::AnyOf("Select tables optimized away",
                                   "No matching min/max row", "No tables used"))
          << sql;
    }
  }
}

TEST_F(LoadingTest, SigtermEndsStreamsWithUnavailableAndExitsZero) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector stream(stub_.get(), "good");
  ASSERT_TRUE(stream.WaitForFields(absl::Seconds(10)));
  EXPECT_EQ(server_->Terminate(absl::Seconds(10)), 0);
  ASSERT_TRUE(stream.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(stream.status().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// docs/operations.md#start-stop-and-the-binlog: "SIGTERM or SIGINT ends open
// streams with `UNAVAILABLE` ... and exits 0."
TEST_F(LoadingTest, SigintEndsStreamsWithUnavailableAndExitsZero) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector stream(stub_.get(), "good");
  ASSERT_TRUE(stream.WaitForFields(absl::Seconds(10)));
  EXPECT_EQ(server_->Terminate(absl::Seconds(10), SIGINT), 0);
  ASSERT_TRUE(stream.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(stream.status().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// docs/operations.md#msgqd-flags: MySQL over TCP as a user with a password,
// given by --mysql_password or by MSGQ_MYSQL_PASSWORD.
TEST_F(LoadingTest, ConnectsOverTcpWithAPasswordFromFlagOrEnvironment) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("good"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("good", 1, 2));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 's3cret pass'"));
  ASSERT_NO_FATAL_FAILURE(Exec("GRANT ALL ON msgq.* TO 'app'@'127.0.0.1'"));
  const std::vector<std::string> tcp = {
      "--mysql_socket=", "--mysql_host=127.0.0.1",
      absl::StrCat("--mysql_port=", db_->port()), "--mysql_user=app"};

  std::vector<std::string> with_flag = tcp;
  with_flag.push_back("--mysql_password=s3cret pass");
  ASSERT_NO_FATAL_FAILURE(StartServer(with_flag));
  {
    StreamCollector s(stub_.get(), "good");
    ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(10)));
    EXPECT_THAT(s.ids(), ElementsAre("1", "2"));
    int64_t acked = -1;
    ASSERT_TRUE(AckIds(stub_.get(), "good", {"1"}, &acked).ok());
    EXPECT_EQ(acked, 1);
  }
  EXPECT_EQ(server_->Terminate(), 0);

  // msgqd inherits this process's environment when it starts.
  ASSERT_EQ(setenv("MSGQ_MYSQL_PASSWORD", "s3cret pass", 1), 0);
  StartServer(tcp);
  const bool started = !HasFatalFailure();
  unsetenv("MSGQ_MYSQL_PASSWORD");
  ASSERT_TRUE(started);
  int64_t acked = -1;
  ASSERT_TRUE(AckIds(stub_.get(), "good", {"2"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.good WHERE time_acked IS "
                        "NOT NULL"),
            "2");

  // Without the password the same user is refused: the table is not served.
  ASSERT_NO_FATAL_FAILURE(StartServer(tcp));
  EXPECT_EQ(AckIds(stub_.get(), "good", {"2"}, &acked).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace msgq::testing
