// BuildMessageTable on a table's required shape: the bookkeeping columns it
// must have (and the error naming every missing one and the table), whether
// the id is in the primary key, which columns are streamed by default and in
// what order, how bad directives in the table comment surface as
// FAILED_PRECONDITION naming the table, and how vt_message_cols picks the
// streamed columns. Id kinds and canonical ids are in message_table_id_test.cc,
// msgq's optional columns and the poll statement in
// message_table_optional_columns_test.cc.
#include "engine/message_table.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/message_table_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::message_table_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

void ExpectFailedPrecondition(const absl::StatusOr<MessageTable>& table,
                              const std::vector<std::string>& substrings) {
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kFailedPrecondition)
      << table.status();
  for (const std::string& s : substrings) {
    EXPECT_THAT(table.status().message(), HasSubstr(s));
  }
}

TEST(BuildMessageTableTest, BuildsFromRequiredColumnsAndDirectives) {
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("shop", "orders", kComment, DemoColumns());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->keyspace, "shop");
  EXPECT_EQ(table->name, "orders");
  EXPECT_EQ(table->settings.ack_wait, absl::Seconds(30));
  EXPECT_EQ(table->settings.purge_after, absl::Seconds(86400));
  EXPECT_EQ(table->settings.batch_size, 10);
  EXPECT_EQ(table->settings.cache_size, 10000);
  EXPECT_EQ(table->settings.poller_interval, absl::Seconds(30));
  EXPECT_EQ(table->settings.min_backoff, absl::Seconds(30));
  EXPECT_EQ(table->settings.max_backoff, absl::InfiniteDuration());
  EXPECT_EQ(table->columns, DemoColumns());
  EXPECT_EQ(table->id_kind, IdKind::kSignedInteger);
  // COLUMN_KEY of id is empty here: no primary key named.
  EXPECT_FALSE(table->id_in_primary_key);
  EXPECT_FALSE(table->primary_key_is_id);
}

TEST(BuildMessageTableTest, KnowsWhenTheIdIsInThePrimaryKey) {
  std::vector<Column> columns = DemoColumns();
  columns[0].key = "pri";
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("shop", "orders", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->id_in_primary_key);
  EXPECT_TRUE(table->primary_key_is_id);
  columns[3].key = "pri";  // PRIMARY KEY (id, time_next)
  const absl::StatusOr<MessageTable> pair =
      BuildMessageTable("shop", "orders", kComment, columns);
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_TRUE(pair->id_in_primary_key);
  EXPECT_FALSE(pair->primary_key_is_id);
  columns[0].key = "uni";
  const absl::StatusOr<MessageTable> unique =
      BuildMessageTable("shop", "orders", kComment, columns);
  ASSERT_TRUE(unique.ok()) << unique.status();
  EXPECT_FALSE(unique->id_in_primary_key);
  EXPECT_FALSE(unique->primary_key_is_id);
}

TEST(BuildMessageTableTest, DefaultStreamedColumnsAreIdThenAppColumns) {
  // id is not first in the table, bookkeeping is interleaved.
  std::vector<Column> columns = {
      Col("kind", "varchar", "varchar(20)"),
      Col("time_next", "bigint"),
      Col("payload", "blob"),
      Col("priority", "int"),
      Col("id", "bigint"),
      Col("epoch", "bigint"),
      Col("time_acked", "bigint"),
      Col("created", "datetime"),
  };
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed),
              ElementsAre("id", "kind", "payload", "created"));
  EXPECT_EQ(table->streamed[0], Col("id", "bigint"));
  EXPECT_EQ(table->streamed[1], Col("kind", "varchar", "varchar(20)"));
  EXPECT_EQ(table->columns, columns);
}

TEST(BuildMessageTableTest, OnlyBookkeepingGivesIdAlone) {
  std::vector<Column> columns = DemoColumns();
  columns.pop_back();  // no application column
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed), ElementsAre("id"));
}

TEST(BuildMessageTableTest, BookkeepingNamesMatchCaseInsensitively) {
  std::vector<Column> columns = {
      Col("Id", "bigint"),         Col("PRIORITY", "int"),
      Col("Time_Next", "bigint"),  Col("EPOCH", "bigint"),
      Col("time_ACKED", "bigint"), Col("Body", "text"),
  };
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed), ElementsAre("Id", "Body"));
}

TEST(BuildMessageTableTest, MissingRequiredColumnNamesItAndTheTable) {
  std::vector<Column> columns = DemoColumns();
  columns.erase(columns.begin() + 3);  // time_next
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("shop", "orders", kComment, columns);
  ExpectFailedPrecondition(table,
                           {"table `shop`.`orders`", "missing", "time_next"});
  EXPECT_THAT(table.status().message(), Not(HasSubstr("time_acked")));
}

TEST(BuildMessageTableTest, MissingRequiredColumnsAreAllNamed) {
  const std::vector<Column> columns = {Col("priority", "int"),
                                       Col("time_acked", "bigint"),
                                       Col("payload", "blob")};
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("shop", "orders", kComment, columns);
  ExpectFailedPrecondition(
      table, {"table `shop`.`orders`", "missing", "id", "time_next", "epoch"});
  EXPECT_THAT(table.status().message(), Not(HasSubstr("priority")));
}

TEST(BuildMessageTableTest, NoColumnsAtAll) {
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, {});
  ExpectFailedPrecondition(table, {"table `db`.`t`", "id", "priority",
                                   "time_next", "epoch", "time_acked"});
}

TEST(BuildMessageTableTest, InvalidDirectivesAreFailedPreconditionNamingTable) {
  // Missing vt_ack_wait.
  ExpectFailedPrecondition(
      BuildMessageTable("db", "t",
                        "vitess_message,vt_purge_after=86400,vt_batch_size=10,"
                        "vt_cache_size=10000,vt_poller_interval=30",
                        DemoColumns()),
      {"table `db`.`t`", "vt_ack_wait"});
  // A directive given twice.
  ExpectFailedPrecondition(
      BuildMessageTable("db", "t", absl::StrCat(kComment, ",vt_batch_size=5"),
                        DemoColumns()),
      {"table `db`.`t`", "vt_batch_size", "twice"});
  // A zero count.
  ExpectFailedPrecondition(
      BuildMessageTable(
          "db", "t",
          "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=0,"
          "vt_cache_size=10000,vt_poller_interval=30",
          DemoColumns()),
      {"table `db`.`t`", "vt_batch_size"});
}

TEST(BuildMessageTableTest, MessageColsChoosesSubsetAndOrder) {
  std::vector<Column> columns = DemoColumns();
  columns.push_back(Col("kind", "varchar", "varchar(10)"));
  columns.push_back(Col("secret", "text"));
  const absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",vt_message_cols=id|kind|message"),
      columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed), ElementsAre("id", "kind", "message"));
  EXPECT_EQ(table->streamed[1], Col("kind", "varchar", "varchar(10)"));
  EXPECT_THAT(table->settings.message_cols,
              ElementsAre("id", "kind", "message"));
}

TEST(BuildMessageTableTest, MessageColsMayNameABookkeepingColumn) {
  const absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",vt_message_cols=id|epoch"),
      DemoColumns());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed), ElementsAre("id", "epoch"));
}

TEST(BuildMessageTableTest, MessageColsUsesTheTablesSpelling) {
  std::vector<Column> columns = DemoColumns();
  columns.push_back(Col("Kind", "varchar"));
  const absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",vt_message_cols=ID|kind"), columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed), ElementsAre("id", "Kind"));
}

TEST(BuildMessageTableTest, MessageColsNamingMissingColumnFails) {
  const absl::StatusOr<MessageTable> table = BuildMessageTable(
      "shop", "orders",
      absl::StrCat(kComment, ",vt_message_cols=id|message|nosuch"),
      DemoColumns());
  ExpectFailedPrecondition(
      table, {"table `shop`.`orders`", "vt_message_cols", "nosuch"});
}

TEST(BuildMessageTableTest, MessageColsNotStartingWithIdFails) {
  ExpectFailedPrecondition(
      BuildMessageTable("db", "t",
                        absl::StrCat(kComment, ",vt_message_cols=message|id"),
                        DemoColumns()),
      {"table `db`.`t`", "vt_message_cols"});
}

}  // namespace
}  // namespace msgq::message_table_test
