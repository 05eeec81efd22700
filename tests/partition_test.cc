// Purge by partition (docs/tables.md#partitioned-tables) against a real MariaDB
// and a real msgqd: schema/message_table_partitioned.sql, partitions created
// ahead, fully acked old partitions dropped, one with a pending row kept and
// reported, delivery unaffected, and msgqd's own partition DDL (followed from
// the binlog) never resetting the table.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "engine/queue/partition_plan.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/next_due_statements.h"
#include "engine/sql/peek_statement.h"
#include "engine/sql/schema_loader.h"
#include "gmock/gmock.h"
#include "tests/http_fixture.h"
#include "tests/partitioned_schema.h"

namespace msgq::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kDemo[] = "{keyspace=\"msgq\",table=\"demo\"}";
// Purge steps of msgq.demo so far: each runs one purge statement (a
// partitioned table's maintenance), timed in this histogram.
constexpr char kPurgeSteps[] =
    "msgq_mysql_statement_seconds_count{keyspace=\"msgq\",kind=\"purge\","
    "table=\"demo\"}";

std::vector<std::string> Range(int from, int to) {
  std::vector<std::string> ids;
  for (int i = from; i <= to; ++i) ids.push_back(std::to_string(i));
  return ids;
}

class PartitionTest : public HttpTest {
 protected:
  // name -> bound (INT64_MAX for MAXVALUE), in ordinal order.
  std::vector<std::pair<std::string, int64_t>> Partitions() {
    std::vector<std::pair<std::string, int64_t>> out;
    auto r = db_->Query(
        "SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM "
        "information_schema.PARTITIONS WHERE TABLE_SCHEMA = 'msgq' AND "
        "TABLE_NAME = 'demo' ORDER BY PARTITION_ORDINAL_POSITION");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return out;
    for (const auto& row : r->rows) {
      int64_t bound = INT64_MAX;
      if (row[1].value_or("") != "MAXVALUE") {
        EXPECT_TRUE(absl::SimpleAtoi(row[1].value_or(""), &bound));
      }
      out.emplace_back(row[0].value_or(""), bound);
    }
    return out;
  }
  bool HasPartition(const std::string& name) {
    for (const auto& [n, bound] : Partitions()) {
      if (n == name) return true;
    }
    return false;
  }
  double Metric(const std::string& family) {
    return Sample(ScrapeMetrics(Url("/metrics")), family + kDemo);
  }
  // A sample named in full (family and labels).
  double SampleNamed(const std::string& sample) {
    return Sample(ScrapeMetrics(Url("/metrics")), sample);
  }
};

TEST_F(PartitionTest, DropsAckedPartitionsKeepsOneWithAPendingRow) {
  const int64_t t = NowNanos();
  // Three partitions of old rows (2 s each, ending 4 s ago) and pmax.
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(PartitionedDdl(
      "vitess_message,vt_ack_wait=30,vt_purge_after=3,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=0.5,msgq_partition_interval=2,"
      "msgq_partitions_ahead=2",
      absl::StrCat("PARTITION old1 VALUES LESS THAN (", t - 8 * kSecond,
                   "), PARTITION old2 VALUES LESS THAN (", t - 6 * kSecond,
                   "), PARTITION old3 VALUES LESS THAN (", t - 4 * kSecond,
                   "), PARTITION pmax VALUES LESS THAN MAXVALUE"))));
  std::string values;
  for (int i = 1; i <= 30; ++i) {
    // 1-10 in old1, 11-20 in old2, 21-30 in old3.
    const int64_t created = t - (9 - 2 * ((i - 1) / 10)) * kSecond + i;
    absl::StrAppend(&values, i > 1 ? "," : "", "(", i, ", '{}', ", created,
                    ")");
  }
  ASSERT_NO_FATAL_FAILURE(Exec(
      "INSERT INTO msgq.demo (id, message, time_created) VALUES " + values));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 31, 40));  // created now
  ASSERT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.demo PARTITION (old2)"),
            "10");
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  EXPECT_TRUE(FindTable(stub_.get(), "demo").loaded());

  StreamCollector s(stub_.get(), "demo");
  ASSERT_TRUE(s.WaitForRows(40, absl::Seconds(20)));
  std::vector<std::string> ack = s.ids();
  ack.erase(std::remove(ack.begin(), ack.end(), "15"), ack.end());
  int64_t acked = 0;
  ASSERT_TRUE(AckIds(stub_.get(), "demo", ack, &acked).ok());
  EXPECT_EQ(acked, 39);

  // Once the acks are 3 s old, old1 and old3 go; old2 (id 15) stays.
  ASSERT_TRUE(Eventually(
      [&] {
        return !HasPartition("old1") && !HasPartition("old3") &&
               Metric("msgq_partitions_dropped_total") >= 2;
      },
      absl::Seconds(30)))
      << server_->Log();
  EXPECT_TRUE(HasPartition("old2"));
  EXPECT_EQ(Metric("msgq_partitions_held_back"), 1);
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.demo PARTITION (old2)"),
            "10");
  // Partitions ahead (the one holding now and two more at the last step,
  // which may be a cell ago), named by bound, pmax still last.
  const int64_t now = NowNanos();
  const auto parts = Partitions();
  ASSERT_GE(parts.size(), 4u);
  EXPECT_EQ(parts.back().first, "pmax");
  int ahead = 0;
  for (const auto& [name, bound] : parts) {
    if (bound != INT64_MAX && bound > now) {
      ++ahead;
      EXPECT_EQ(name, PartitionNameFor(bound));
      EXPECT_EQ(bound % (2 * kSecond), 0) << name;
    }
  }
  EXPECT_GE(ahead, 2);
  EXPECT_GE(Metric("msgq_partitions_created_total"), 3);

  // Delivery goes on; many purge steps pass, one log line about old2.
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 41, 50));
  ASSERT_TRUE(s.WaitForRows(50, absl::Seconds(20)))
      << s.status().error_message() << "\n"
      << server_->Log();
  ASSERT_TRUE(AckIds(stub_.get(), "demo", Range(41, 50), &acked).ok());
  EXPECT_EQ(acked, 10);
  // Four more purge steps (one purge statement each).
  const double purges = SampleNamed(kPurgeSteps);
  ASSERT_TRUE(Eventually([&] { return SampleNamed(kPurgeSteps) >= purges + 4; },
                         absl::Seconds(30)))
      << purges;
  const std::string log = server_->Log();
  const std::string held = "partition `old2` is past vt_purge_after but kept";
  size_t lines = 0;
  for (size_t at = log.find(held); at != std::string::npos;
       at = log.find(held, at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_THAT(log, HasSubstr(held + ": it still holds unacked or dead rows "
                                    "(e.g. id "));
  // msgqd's own ADD/REORGANIZE/DROP PARTITION reached it through the
  // binlog and did not reset the table: the stream is still open, nothing
  // was delivered twice and nothing is missing.
  EXPECT_THAT(log, Not(HasSubstr("starting over")));
  EXPECT_FALSE(s.WaitForEnd(absl::Milliseconds(100)));
  std::vector<std::string> ids = s.ids();
  std::sort(ids.begin(), ids.end(), [](const auto& a, const auto& b) {
    return std::stoi(a) < std::stoi(b);
  });
  std::vector<std::string> expected;
  for (int i = 1; i <= 50; ++i) expected.push_back(std::to_string(i));
  EXPECT_EQ(ids, expected);

  // Acking the last pending row frees old2.
  ASSERT_TRUE(AckIds(stub_.get(), "demo", {"15"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  ASSERT_TRUE(Eventually(
      [&] {
        return !HasPartition("old2") &&
               Metric("msgq_partitions_dropped_total") >= 3 &&
               Metric("msgq_partitions_held_back") == 0;
      },
      absl::Seconds(30)))
      << server_->Log();
  EXPECT_FALSE(s.WaitForEnd(absl::Milliseconds(100)))
      << s.status().error_message() << "\n"
      << server_->Log();

  // A user's real ALTER still replaces the manager.
  ASSERT_NO_FATAL_FAILURE(Exec("ALTER TABLE msgq.demo ADD COLUMN note int"));
  ASSERT_TRUE(s.WaitForEnd(absl::Seconds(10)));
  EXPECT_EQ(s.status().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// Every statement msgqd sends on the partitioned table uses the index it
// uses on the plain one.
TEST_F(PartitionTest, StatementsUseTheirIndexes) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  const int64_t t = NowNanos();
  ASSERT_NO_FATAL_FAILURE(Exec(PartitionedDdl(
      "vitess_message,vt_ack_wait=30,vt_purge_after=3,vt_batch_size=10,"
      "vt_cache_size=10000,vt_poller_interval=30,msgq_dead_retention=60",
      absl::StrCat("PARTITION a VALUES LESS THAN (", t - kSecond,
                   "), PARTITION b VALUES LESS THAN (", t + 1000 * kSecond,
                   "), PARTITION pmax VALUES LESS THAN MAXVALUE"))));
  std::string values;
  for (int i = 1; i <= 3000; ++i) {
    absl::StrAppend(&values, i > 1 ? "," : "", "(", i, ",", i % 7, ",",
                    i % 3 == 0 ? "NULL" : "0", ",", i % 3 == 0 ? "5" : "NULL",
                    ",", t - 2 * kSecond + (i % 2) * 10 * kSecond, ")");
  }
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.demo (id, priority, time_next, time_acked, "
           "time_created) VALUES " +
           values));
  ASSERT_NO_FATAL_FAILURE(Exec("ANALYZE TABLE msgq.demo"));
  auto conn = db_->Connect();
  ASSERT_TRUE(conn.ok());
  auto schema = LoadSchema(**conn, {"msgq"});
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ(schema->tables.size(), 1u);
  const TableDefinition& def = schema->tables[0];
  EXPECT_EQ(def.partition_method, "RANGE");
  EXPECT_EQ(def.partition_expression, "`time_created`");
  auto table =
      BuildMessageTable(def.keyspace, def.name, def.comment, def.columns);
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore store(*table, db_->mysql_options());

  auto newest = PeekSql(*table, {.order = PeekOrder::kNewest, .limit = 50});
  auto next = PeekSql(*table, {.order = PeekOrder::kNextDue, .limit = 50});
  ASSERT_TRUE(newest.ok() && next.ok());
  // statement -> index it must use
  const std::vector<std::pair<std::string, std::string>> cases = {
      {*newest, "PRIMARY"},
      {*next, "poller_idx"},
      {store.PollSql(t, 1000), "poller_idx"},
      {store.PollSql(std::nullopt, 1000), "poller_idx"},  // as msgqd sends it
      {store.CountDeadSql(), "poller_idx"},
      {"SELECT `id` FROM `msgq`.`demo` WHERE `id` IN (2,4) AND `time_acked` "
       "IS NULL AND `time_next` <= 5",
       "PRIMARY"},
      // An ack as the store writes it (a multi-table UPDATE: the derived
      // table gets rows of its own in EXPLAIN).
      {"UPDATE `msgq`.`demo` FORCE INDEX (PRIMARY) JOIN (SELECT 1) AS "
       "`msgq_settle` SET `time_acked` = 1, `time_next` = NULL WHERE "
       "`id` IN (2,4) AND `time_acked` IS NULL AND `time_next` IS NOT NULL",
       "PRIMARY"},
      {"DELETE FROM `msgq`.`demo` WHERE `time_dead` < 5 LIMIT 500", "dead_idx"},
      {store.partition_sql().Blocker("a", t, t), "poller_idx"},
  };
  for (const auto& [sql, index] : cases) {
    auto explain = db_->Query("EXPLAIN " + sql);
    ASSERT_TRUE(explain.ok()) << sql << ": " << explain.status();
    // The one row that reads the message table.
    std::map<std::string, std::string> row;
    int demo_rows = 0;
    for (const auto& r : explain->rows) {
      std::map<std::string, std::string> named;
      for (size_t i = 0; i < explain->columns.size(); ++i) {
        named[explain->columns[i]] = r[i].value_or("");
      }
      if (named["table"] != "demo") continue;
      ++demo_rows;
      row = std::move(named);
    }
    ASSERT_EQ(demo_rows, 1) << sql;
    EXPECT_EQ(row["key"], index) << sql;
    EXPECT_THAT(row["Extra"], Not(HasSubstr("filesort"))) << sql;
  }
  // The next-due statements are answered from the index by rule, one
  // dive per MIN and partition.
  for (const std::string& sql :
       {NextDueFirstSql("`msgq`.`demo`"), NextDueStepSql("`msgq`.`demo`", 3, t),
        NextDueStepSql("`msgq`.`demo`", 3, std::nullopt)}) {
    auto explain = db_->Query("EXPLAIN " + sql);
    ASSERT_TRUE(explain.ok()) << sql << ": " << explain.status();
    ASSERT_FALSE(explain->rows.empty()) << sql;
    for (const auto& r : explain->rows) {
      EXPECT_THAT(r.back().value_or(""),
                  ::testing::AnyOf("Select tables optimized away",
                                   "No matching min/max row", "No tables used"))
          << sql;
    }
  }
  // The blocker reads one partition only.
  auto parts = db_->Query("EXPLAIN PARTITIONS " +
                          store.partition_sql().Blocker("a", t, t));
  ASSERT_TRUE(parts.ok()) << parts.status();
  for (size_t i = 0; i < parts->columns.size(); ++i) {
    if (parts->columns[i] == "partitions") {
      EXPECT_EQ(parts->rows[0][i].value_or(""), "a");
    }
  }
}

}  // namespace
}  // namespace msgq::testing
