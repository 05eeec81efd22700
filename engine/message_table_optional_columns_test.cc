// msgq's optional columns (docs/tables.md#optional-columns) and the poll
// statement built from a table: time_created, time_dead and last_error are
// found by name and type-checked, last_error's capacity follows its type, the
// msgq_* failure directives that need a column refuse a table without it, and
// the poll's SELECT reads time_created only when the table has it and carries
// a LIMIT clamped to [0, kMaxPollRows]. Required columns are in
// message_table_test.cc.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/directives.h"
#include "engine/message_table.h"
#include "engine/message_table_test_util.h"
#include "engine/sql/mysql_message_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::message_table_test {
namespace {

using ::testing::ElementsAre;

// The poll's LIMIT is computed from cache size and ids in flight; whatever
// the caller asks, the statement carries a LIMIT in [0, kMaxPollRows], never
// a wrapped or negative number.
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

// msgq_dedup_window needs dedup_key with a unique index of its own
// (Column::key "uni") and time_created; without the directive the column
// is the application's.
TEST(OptionalColumnsTest, DedupWindowNeedsAUniqueDedupKeyAndTimeCreated) {
  const std::string comment = absl::StrCat(kComment, ",msgq_dedup_window=60");
  auto key = [](std::string data_type, std::string column_type,
                std::string index) {
    Column c = Col("dedup_key", std::move(data_type), std::move(column_type));
    c.key = std::move(index);
    return c;
  };
  const Column created = Col("time_created", "bigint", "bigint(20)");
  absl::StatusOr<MessageTable> table = BuildMessageTable(
      "db", "t", comment,
      WithColumns({key("varchar", "varchar(64)", "uni"), created}));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->settings.dedup_window, absl::Seconds(60));
  table = BuildMessageTable("db", "t", kComment,
                            WithColumns({key("json", "longtext", "mul")}));
  EXPECT_TRUE(table.ok()) << table.status();

  const std::string fix =
      "; add UNIQUE KEY dedup_key (dedup_key) so that MySQL refuses a second "
      "row with the same key";
  struct Case {
    std::vector<Column> extra;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {{created},
            "msgq_dedup_window needs a dedup_key column (varchar or "
            "varbinary, NULL = not deduplicated) with a unique index of its "
            "own"},
           {{key("bigint", "bigint(20)", "uni"), created},
            "column dedup_key is bigint(20); msgq needs char, varchar, "
            "binary or varbinary"},
           {{key("varchar", "varchar(64)", ""), created},
            "column dedup_key has no unique index" + fix},
           {{key("varchar", "varchar(64)", "mul"), created},
            "column dedup_key has no unique index of its own (its index is "
            "not unique or spans more columns)" +
                fix},
           {{key("varbinary", "varbinary(64)", "pri"), created},
            "column dedup_key is in the primary key" + fix},
           {{key("varbinary", "varbinary(64)", "uni")},
            "msgq_dedup_window needs a time_created column (bigint, Unix ns "
            "of the enqueue; the window counts from it)"},
       }) {
    table = BuildMessageTable("db", "t", comment, WithColumns(c.extra));
    EXPECT_EQ(table.status(),
              absl::FailedPreconditionError("table `db`.`t`: " + c.error));
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
}  // namespace msgq::message_table_test
