// msgq_order_by (ordered delivery per key): the directive, the table check
// and the head condition every read of due rows carries. The behaviour
// against MariaDB is tests/flow_order_test.cc.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/directives.h"
#include "engine/message_table.h"
#include "engine/sql/mysql_message_store.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

constexpr char kComment[] =
    "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
    "vt_cache_size=10000,vt_poller_interval=30";

std::vector<Column> Columns() {
  return {Column{"id", "bigint", "bigint(20)"},
          Column{"priority", "tinyint", "tinyint(4)"},
          Column{"epoch", "bigint", "bigint(20)"},
          Column{"time_next", "bigint", "bigint(20)"},
          Column{"time_acked", "bigint", "bigint(20)"},
          Column{"Order_Key", "int", "int(11)"},
          Column{"message", "json", "longtext"}};
}

absl::StatusOr<MessageTable> Build(const std::string& directive) {
  return BuildMessageTable("shop", "orders",
                           absl::StrCat(kComment, ",", directive), Columns());
}

TEST(OrderByDirectiveTest, ParsesAColumnName) {
  absl::StatusOr<TableSettings> s =
      ParseDirectives(absl::StrCat(kComment, ", msgq_order_by = order_key "));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->order_by, "order_key");
  s = ParseDirectives(kComment);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->order_by, "");  // unordered
}

TEST(OrderByDirectiveTest, RefusesWhatIsNotAPlainColumnName) {
  for (const char* bad : {"a-b", "a`b", "a b", ""}) {
    SCOPED_TRACE(bad);
    const absl::StatusOr<TableSettings> s =
        ParseDirectives(absl::StrCat(kComment, ",msgq_order_by=", bad));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  }
  const absl::StatusOr<TableSettings> s =
      ParseDirectives(absl::StrCat(kComment, ",msgq_order_by=a-b"));
  EXPECT_EQ(s.status().message(),
            "msgq_order_by: \"a-b\" is not a column name (letters, digits, _ "
            "and $)");
  const std::string long_name(65, 'k');
  EXPECT_FALSE(
      ParseDirectives(absl::StrCat(kComment, ",msgq_order_by=", long_name))
          .ok());
}

TEST(OrderByTableTest, TakesTheTablesSpellingOfTheColumn) {
  const absl::StatusOr<MessageTable> table = Build("msgq_order_by=order_key");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->settings.order_by, "Order_Key");
}

TEST(OrderByTableTest, MissingOrOwnColumnIsRefused) {
  absl::StatusOr<MessageTable> table = Build("msgq_order_by=tenant");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table.status().message(),
            "table `shop`.`orders`: msgq_order_by names column tenant which "
            "the table does not have");
  for (const char* own : {"id", "priority", "time_next", "EPOCH"}) {
    SCOPED_TRACE(own);
    table = Build(absl::StrCat("msgq_order_by=", own));
    EXPECT_EQ(table.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(table.status().message().find("one of msgq's own columns"),
              absl::string_view::npos)
        << table.status();
  }
}

TEST(OrderByStatementTest, PollReadsOnlyHeadsOfKeys) {
  const absl::StatusOr<MessageTable> table = Build("msgq_order_by=order_key");
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore store(*table, MysqlOptions{});  // connects lazily
  EXPECT_EQ(store.PollSql(5, 10),
            "SELECT `priority`, `time_next`, `epoch`, `id`, `Order_Key`, "
            "`message` FROM `shop`.`orders` WHERE `time_acked` IS NULL AND "
            "`time_next` <= 5 AND NOT EXISTS (SELECT 1 FROM `shop`.`orders` "
            "AS `msgq_head` WHERE `msgq_head`.`Order_Key` = "
            "`shop`.`orders`.`Order_Key` AND `msgq_head`.`time_acked` IS "
            "NULL AND `msgq_head`.`time_next` IS NOT NULL AND "
            "`msgq_head`.`id` < `shop`.`orders`.`id`) ORDER BY `priority`, "
            "`time_next`, `id` LIMIT 10");
}

TEST(OrderByStatementTest, UnorderedPollHasNoHeadCondition) {
  const absl::StatusOr<MessageTable> table =
      BuildMessageTable("shop", "orders", kComment, Columns());
  ASSERT_TRUE(table.ok()) << table.status();
  MysqlMessageStore store(*table, MysqlOptions{});
  EXPECT_EQ(store.PollSql(5, 10),
            "SELECT `priority`, `time_next`, `epoch`, `id`, `Order_Key`, "
            "`message` FROM `shop`.`orders` WHERE `time_acked` IS NULL AND "
            "`time_next` <= 5 ORDER BY `priority`, `time_next`, `id` LIMIT "
            "10");
}

}  // namespace
}  // namespace msgq
