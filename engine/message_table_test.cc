#include "engine/message_table.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/directives.h"
#include "engine/sql/mysql_message_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kComment[] =
    "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
    "vt_cache_size=10000,vt_poller_interval=30";

Column Col(std::string name, std::string data_type,
           std::string column_type = "") {
  if (column_type.empty()) column_type = data_type;
  return Column{std::move(name), std::move(data_type), std::move(column_type)};
}

// The schema/message_table.sql layout: id, bookkeeping, then app columns.
std::vector<Column> DemoColumns() {
  return {Col("id", "bigint", "bigint(20)"),
          Col("priority", "tinyint", "tinyint(4)"),
          Col("epoch", "bigint", "bigint(20)"),
          Col("time_next", "bigint", "bigint(20)"),
          Col("time_acked", "bigint", "bigint(20)"),
          Col("message", "json", "longtext")};
}

std::vector<std::string> Names(const std::vector<Column>& columns) {
  std::vector<std::string> names;
  for (const Column& c : columns) names.push_back(c.name);
  return names;
}

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
}

TEST(BuildMessageTableTest, KnowsWhenTheIdIsInThePrimaryKey) {
  std::vector<Column> columns = DemoColumns();
  columns[0].key = "pri";
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("shop", "orders", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->id_in_primary_key);
  columns[0].key = "uni";
  const absl::StatusOr<MessageTable> unique =
      BuildMessageTable("shop", "orders", kComment, columns);
  ASSERT_TRUE(unique.ok()) << unique.status();
  EXPECT_FALSE(unique->id_in_primary_key);
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

struct IdKindCase {
  Column id;
  IdKind expected;
};

class IdKindTest : public ::testing::TestWithParam<IdKindCase> {};

TEST_P(IdKindTest, FromIdColumnType) {
  std::vector<Column> columns = DemoColumns();
  columns[0] = GetParam().id;
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, columns);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->id_kind, GetParam().expected)
      << GetParam().id.data_type << " / " << GetParam().id.column_type;
}

INSTANTIATE_TEST_SUITE_P(
    Types, IdKindTest,
    ::testing::Values(
        IdKindCase{Col("id", "bigint", "bigint(20)"), IdKind::kSignedInteger},
        IdKindCase{Col("id", "bigint", "bigint(20) unsigned"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "BIGINT", "BIGINT(20) UNSIGNED"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "int", "int(11)"), IdKind::kSignedInteger},
        IdKindCase{Col("id", "int", "int(10) unsigned zerofill"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "tinyint", "tinyint(4)"), IdKind::kSignedInteger},
        IdKindCase{Col("id", "smallint", "smallint(6)"),
                   IdKind::kSignedInteger},
        IdKindCase{Col("id", "mediumint", "mediumint(8) unsigned"),
                   IdKind::kUnsignedInteger},
        IdKindCase{Col("id", "varchar", "varchar(64)"), IdKind::kText},
        IdKindCase{Col("id", "char", "char(36)"), IdKind::kText},
        IdKindCase{Col("id", "varbinary", "varbinary(16)"), IdKind::kBinary},
        IdKindCase{Col("id", "binary", "binary(16)"), IdKind::kBinary},
        IdKindCase{Col("id", "blob", "blob"), IdKind::kBinary}));

TEST(CanonicalIdTest, SignedIntegers) {
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "7"), "7");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "007"), "7");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "0"), "0");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "-1"), "-1");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "-0"), "0");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "9223372036854775807"),
            "9223372036854775807");
  EXPECT_EQ(*CanonicalId(IdKind::kSignedInteger, "-9223372036854775808"),
            "-9223372036854775808");
}

TEST(CanonicalIdTest, UnsignedIntegers) {
  EXPECT_EQ(*CanonicalId(IdKind::kUnsignedInteger, "42"), "42");
  EXPECT_EQ(*CanonicalId(IdKind::kUnsignedInteger, "00042"), "42");
  EXPECT_EQ(*CanonicalId(IdKind::kUnsignedInteger, "18446744073709551615"),
            "18446744073709551615");
}

TEST(CanonicalIdTest, MalformedIntegersAreInvalidArgument) {
  struct Case {
    IdKind kind;
    const char* id;
  };
  for (const Case& c : {
           Case{IdKind::kSignedInteger, "abc"},
           Case{IdKind::kSignedInteger, "12abc"},
           Case{IdKind::kSignedInteger, "1.5"},
           Case{IdKind::kSignedInteger, "1e3"},
           Case{IdKind::kSignedInteger, "0x10"},
           Case{IdKind::kSignedInteger, " 7"},
           Case{IdKind::kSignedInteger, "7 "},
           Case{IdKind::kSignedInteger, "+7"},
           Case{IdKind::kSignedInteger, "-"},
           Case{IdKind::kSignedInteger, "9223372036854775808"},
           Case{IdKind::kSignedInteger, "-9223372036854775809"},
           Case{IdKind::kSignedInteger, "1;DROP TABLE t"},
           Case{IdKind::kUnsignedInteger, "-1"},
           Case{IdKind::kUnsignedInteger, "-0"},
           Case{IdKind::kUnsignedInteger, "+1"},
           Case{IdKind::kUnsignedInteger, "abc"},
           Case{IdKind::kUnsignedInteger, "18446744073709551616"},
       }) {
    const absl::StatusOr<std::string> id = CanonicalId(c.kind, c.id);
    ASSERT_FALSE(id.ok()) << '"' << c.id << "\" gave " << *id;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << c.id;
    EXPECT_THAT(id.status().message(), HasSubstr("malformed message id"))
        << c.id;
  }
}

TEST(CanonicalIdTest, MalformedIdIsEscapedInTheMessage) {
  const absl::StatusOr<std::string> id =
      CanonicalId(IdKind::kSignedInteger, std::string("a\n\"b\0", 5));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(id.status().message(), Not(HasSubstr("\n")));
}

TEST(CanonicalIdTest, EmptyIsInvalidForEveryKind) {
  for (IdKind kind : {IdKind::kSignedInteger, IdKind::kUnsignedInteger,
                      IdKind::kBinary, IdKind::kText}) {
    const absl::StatusOr<std::string> id = CanonicalId(kind, "");
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(CanonicalIdTest, TextAndBinaryIdsAreUnchanged) {
  for (IdKind kind : {IdKind::kText, IdKind::kBinary}) {
    for (const std::string& s :
         {std::string("007"), std::string(" padded "), std::string("abc"),
          std::string("it's"), std::string("\x00\x01", 2),
          std::string("\xc3\xa9"), std::string("-1")}) {
      const absl::StatusOr<std::string> id = CanonicalId(kind, s);
      ASSERT_TRUE(id.ok()) << id.status();
      EXPECT_EQ(*id, s);
    }
  }
  EXPECT_EQ(*CanonicalId(IdKind::kBinary, "\xff"), "\xff");
}

TEST(CanonicalIdTest, TextIdsMustBeUtf8) {
  const absl::StatusOr<std::string> id = CanonicalId(IdKind::kText, "a\xff");
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(id.status().message()),
            "malformed message id \"a\\xff\": the id column is text and the "
            "id is not UTF-8");
}

// Defect 12: the poll's LIMIT is computed from cache size and ids in
// flight; whatever the caller asks, the statement carries a LIMIT in
// [0, kMaxPollRows], never a wrapped or negative number.
TEST(PollSqlTest, LimitIsClampedAndNeverOverflows) {
  absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, DemoColumns());
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore store(*table, MysqlOptions{});  // connects lazily
  EXPECT_THAT(store.PollSql(5, 10010), ::testing::EndsWith(" LIMIT 10010"));
  EXPECT_THAT(store.PollSql(5, std::numeric_limits<int64_t>::max()),
              ::testing::EndsWith(" LIMIT 2000000"));
  EXPECT_THAT(store.PollSql(5, int64_t{1} << 31),
              ::testing::EndsWith(" LIMIT 2000000"));
  EXPECT_THAT(store.PollSql(5, -1), ::testing::EndsWith(" LIMIT 0"));
  EXPECT_EQ(MysqlMessageStore::kMaxPollRows, 2 * int64_t{kMaxCacheSize});
}

// ---- msgq's optional columns (issue 12) -----------------------------------

std::vector<Column> WithColumns(std::vector<Column> extra) {
  std::vector<Column> columns = DemoColumns();
  for (Column& c : extra) columns.push_back(std::move(c));
  return columns;
}

TEST(OptionalColumnsTest, AbsentByDefault) {
  absl::StatusOr<MessageTable> table =
      BuildMessageTable("db", "t", kComment, DemoColumns());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_FALSE(table->has_time_created);
  EXPECT_FALSE(table->has_time_dead);
  EXPECT_EQ(table->last_error_chars, 0);
}

TEST(OptionalColumnsTest, FoundAndTimeDeadIsNotStreamedByDefault) {
  absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t",
      absl::StrCat(kComment,
                   ",msgq_max_attempts=5,msgq_max_age=60,"
                   "msgq_dead_retention=600"),
      WithColumns({Col("Time_Created", "bigint", "bigint(20)"),
                   Col("time_dead", "bigint", "bigint(20) unsigned"),
                   Col("last_error", "varchar", "varchar(200)")}));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->has_time_created);
  EXPECT_TRUE(table->has_time_dead);
  EXPECT_EQ(table->last_error_chars, 200);
  EXPECT_EQ(table->settings.max_attempts, 5);
  EXPECT_THAT(Names(table->streamed),
              ElementsAre("id", "message", "Time_Created", "last_error"));
  // Named by vt_message_cols, time_dead is streamed like any column.
  table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",vt_message_cols=id|time_dead"),
      WithColumns({Col("time_dead", "bigint", "bigint(20)")}));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(Names(table->streamed), ElementsAre("id", "time_dead"));
}

TEST(OptionalColumnsTest, TimeColumnsMustBeIntegers) {
  for (const char* col : {"time_created", "time_dead"}) {
    absl::StatusOr<MessageTable> table = BuildMessageTable(
        "db", "t", kComment, WithColumns({Col(col, "varchar", "varchar(20)")}));
    EXPECT_EQ(table.status(),
              absl::FailedPreconditionError(absl::StrCat(
                  "table `db`.`t`: column ", col,
                  " is varchar(20); msgq needs an integer (Unix ns, e.g. "
                  "bigint)")));
    table = BuildMessageTable("db", "t", kComment,
                              WithColumns({Col(col, "datetime", "datetime")}));
    EXPECT_EQ(table.status(),
              absl::FailedPreconditionError(absl::StrCat(
                  "table `db`.`t`: column ", col,
                  " is datetime; msgq needs an integer (Unix ns, e.g. "
                  "bigint)")));
  }
}

TEST(OptionalColumnsTest, LastErrorMustBeText) {
  for (const auto& [data_type, column_type] :
       std::vector<std::pair<std::string, std::string>>{
           {"int", "int(11)"}, {"blob", "blob"}, {"json", "longtext"}}) {
    absl::StatusOr<MessageTable> table = BuildMessageTable(
        "db", "t", kComment,
        WithColumns({Col("last_error", data_type, column_type)}));
    EXPECT_EQ(table.status(),
              absl::FailedPreconditionError(absl::StrCat(
                  "table `db`.`t`: column last_error is ", column_type,
                  "; msgq needs char, varchar or text")));
  }
}

TEST(OptionalColumnsTest, LastErrorCharsFollowTheType) {
  struct Case {
    const char* data_type;
    const char* column_type;
    int chars;
  };
  for (const Case& c : std::vector<Case>{
           {"varchar", "varchar(8)", 8},
           {"varchar", "varchar(16383)", 16383},
           {"char", "char(1)", 1},
           {"char", "char(20)", 20},
           {"tinytext", "tinytext", 63},
           {"text", "text", 16383},
           {"mediumtext", "mediumtext", 65535},
           {"longtext", "longtext", 65535},
       }) {
    absl::StatusOr<MessageTable> table = BuildMessageTable(
        "db", "t", kComment,
        WithColumns({Col("last_error", c.data_type, c.column_type)}));
    ASSERT_TRUE(table.ok()) << table.status();
    EXPECT_EQ(table->last_error_chars, c.chars) << c.column_type;
  }
}

TEST(OptionalColumnsTest, MaxAgeNeedsTimeCreated) {
  absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",msgq_max_age=60"),
      WithColumns({Col("time_dead", "bigint", "bigint(20)")}));
  EXPECT_EQ(table.status(),
            absl::FailedPreconditionError(
                "table `db`.`t`: msgq_max_age needs a time_created column "
                "(bigint, Unix ns of the first enqueue)"));
  // msgq_max_attempts needs no column.
  table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",msgq_max_attempts=2"), DemoColumns());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->settings.max_attempts, 2);
}

TEST(OptionalColumnsTest, DeadRetentionNeedsTimeDead) {
  absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",msgq_dead_retention=60"),
      WithColumns({Col("time_created", "bigint", "bigint(20)")}));
  EXPECT_EQ(table.status(),
            absl::FailedPreconditionError(
                "table `db`.`t`: msgq_dead_retention needs a time_dead column "
                "(bigint, Unix ns; msgq sets it when a message dies)"));
}

TEST(OptionalColumnsTest, InvalidFailureDirectiveIsFailedPrecondition) {
  absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", absl::StrCat(kComment, ",msgq_max_attempts=0"), DemoColumns());
  EXPECT_EQ(table.status(),
            absl::FailedPreconditionError(
                "table `db`.`t`: msgq_max_attempts: \"0\" must be a positive "
                "integer no larger than 1000000"));
}

// The poll reads time_created after the bookkeeping columns, before the
// streamed ones, only when the table has it.
TEST(PollSqlTest, ReadsTimeCreatedWhenTheTableHasIt) {
  absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", kComment,
      WithColumns({Col("time_created", "bigint", "bigint(20)")}));
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore store(*table, MysqlOptions{});
  EXPECT_THAT(store.PollSql(5, 1),
              ::testing::StartsWith(
                  "SELECT `priority`, `time_next`, `epoch`, `time_created`, "
                  "`id`, `message`, `time_created` FROM `db`.`t` WHERE"));
  table = BuildMessageTable("db", "t", kComment, DemoColumns());
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore plain(*table, MysqlOptions{});
  EXPECT_THAT(plain.PollSql(5, 1),
              ::testing::StartsWith("SELECT `priority`, `time_next`, `epoch`, "
                                    "`id`, `message` FROM `db`.`t` WHERE"));
}

}  // namespace
}  // namespace msgq
