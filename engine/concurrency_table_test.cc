// msgq_concurrency_by / msgq_concurrency (at most N at once per key): the
// directives, the key column check at load, row images and the statements. The
// manager's logic is queue/manager/message_manager_concurrency_test.cc; against
// MariaDB, tests/flow_concurrency_test.cc.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/binlog/bookkeeping_columns.h"
#include "engine/concurrency_column.h"
#include "engine/directives.h"
#include "engine/message_table.h"
#include "engine/sql/mysql_message_store.h"
#include "engine/sql/next_due_statements.h"
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
          Column{"Tenant", "int", "int(10) unsigned"},
          Column{"region", "varchar", "varchar(32)"},
          Column{"notes", "text", "text"},
          Column{"message", "json", "longtext"}};
}

absl::StatusOr<MessageTable> Build(const std::string& directives) {
  return BuildMessageTable("shop", "jobs",
                           absl::StrCat(kComment, ",", directives), Columns());
}

std::string ErrorOf(const std::string& directives) {
  const absl::StatusOr<TableSettings> s =
      ParseDirectives(absl::StrCat(kComment, ",", directives));
  if (s.ok()) return "ok";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.status().message());
}

TEST(ConcurrencyDirectiveTest, ParsesTheColumnAndTheLimit) {
  absl::StatusOr<TableSettings> s = ParseDirectives(absl::StrCat(
      kComment, ", msgq_concurrency_by = tenant , msgq_concurrency = 3"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->concurrency_by, "tenant");
  EXPECT_EQ(s->concurrency, 3);
  // One at a time without ordering is allowed.
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=tenant,msgq_concurrency=1"), "ok");
  // With msgq_fair_by on the same column (any case) it composes.
  EXPECT_EQ(ErrorOf("msgq_fair_by=Tenant,msgq_concurrency_by=tenant,"
                    "msgq_concurrency=2"),
            "ok");
  s = ParseDirectives(kComment);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->concurrency_by, "");
  EXPECT_EQ(s->concurrency, 0);
}

TEST(ConcurrencyDirectiveTest, ValidationErrors) {
  EXPECT_EQ(ErrorOf("msgq_concurrency=3"),
            "msgq_concurrency needs msgq_concurrency_by (the column it "
            "limits by)");
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=tenant"),
            "msgq_concurrency_by needs msgq_concurrency (the most messages of "
            "one key in flight at once)");
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=tenant,msgq_concurrency=0"),
            "msgq_concurrency: \"0\" must be a positive integer no larger "
            "than 10000");
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=tenant,msgq_concurrency=1.5"),
            "msgq_concurrency: \"1.5\" must be a positive integer no larger "
            "than 10000");
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=tenant,msgq_concurrency=10001"),
            "msgq_concurrency: \"10001\" is more than 10000");
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=a-b,msgq_concurrency=2"),
            "msgq_concurrency_by: \"a-b\" is not a column name (letters, "
            "digits, _ and $)");
  EXPECT_EQ(
      ErrorOf("msgq_concurrency_by=tenant,msgq_concurrency="),
      "msgq_concurrency: missing value (expected msgq_concurrency=value)");
  EXPECT_EQ(ErrorOf("msgq_order_by=Tenant,msgq_concurrency_by=tenant,"
                    "msgq_concurrency=2"),
            "msgq_concurrency_by and msgq_order_by cannot name the same "
            "column (an ordered key sends one message at a time already)");
  EXPECT_EQ(ErrorOf("msgq_order_by=region,msgq_concurrency_by=tenant,"
                    "msgq_concurrency=2"),
            "msgq_concurrency_by and msgq_order_by cannot be combined (an "
            "ordered table reads only its keys' heads)");
  EXPECT_EQ(ErrorOf("msgq_fair_by=region,msgq_concurrency_by=tenant,"
                    "msgq_concurrency=2"),
            "msgq_concurrency_by (tenant) and msgq_fair_by (region) must name "
            "the same column (the poll reads per value of one column)");
  EXPECT_EQ(ErrorOf("msgq_concurrency_by=tenant,msgq_concurrency=2,"
                    "msgq_concurrency=3"),
            "msgq_concurrency: given twice (\"2\" and \"3\")");
}

TEST(ConcurrencyKeyTest, TakesTheTablesSpellingAndKind) {
  absl::StatusOr<MessageTable> t =
      Build("msgq_concurrency_by=tenant,msgq_concurrency=2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->settings.concurrency_by, "Tenant");  // as the table spells it
  absl::StatusOr<ConcurrencyKey> key = ResolveConcurrencyKey(*t);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->column, "Tenant");
  EXPECT_EQ(key->kind, IdKind::kUnsignedInteger);
  t = Build("msgq_concurrency_by=REGION,msgq_concurrency=2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->settings.concurrency_by, "region");
  key = ResolveConcurrencyKey(*t);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->column, "region");
  EXPECT_EQ(key->kind, IdKind::kText);
}

// The column is checked at load, like msgq_fair_by's: a table whose
// msgq_concurrency_by column is missing, msgq's own or of a type an index
// cannot hold whole does not load.
TEST(ConcurrencyKeyTest, MissingOwnOrUnindexableColumnFailsTheLoad) {
  auto error = [](const std::string& column) {
    const absl::StatusOr<MessageTable> t = Build(
        absl::StrCat("msgq_concurrency_by=", column, ",msgq_concurrency=2"));
    EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
    return std::string(t.status().message());
  };
  EXPECT_EQ(error("nope"),
            "table `shop`.`jobs`: msgq_concurrency_by names column nope which "
            "the table does not have");
  EXPECT_EQ(error("epoch"),
            "table `shop`.`jobs`: msgq_concurrency_by names epoch, one of "
            "msgq's own columns; name a column of yours (the key)");
  EXPECT_EQ(error("ID"),
            "table `shop`.`jobs`: msgq_concurrency_by names id, one of "
            "msgq's own columns; name a column of yours (the key)");
  EXPECT_EQ(error("notes"),
            "table `shop`.`jobs`: msgq_concurrency_by column notes is text; "
            "msgq needs an integer, char, varchar, binary or varbinary column "
            "(one that an index holds whole)");
  EXPECT_EQ(error("message"),
            "table `shop`.`jobs`: msgq_concurrency_by column message is "
            "longtext; msgq needs an integer, char, varchar, binary or "
            "varbinary column (one that an index holds whole)");
  // With msgq_fair_by on the same column, the fair column's check speaks
  // first (it names the same cause).
  const absl::StatusOr<MessageTable> fair =
      Build("msgq_fair_by=notes,msgq_concurrency_by=notes,msgq_concurrency=2");
  EXPECT_EQ(fair.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fair.status().message(),
            "table `shop`.`jobs`: msgq_fair_by column notes is text; msgq "
            "needs an integer, char, varchar, binary or varbinary column (one "
            "that an index holds whole)");
}

// Binlog row images carry no key for the gate, and a poll reads at most a
// key's free slots: a limited table renders no images (the manager polls
// for a due row instead), whatever its columns; the same table without
// the limit does.
TEST(ConcurrencyKeyTest, ALimitedTableUsesNoRowImages) {
  const absl::StatusOr<MessageTable> plain =
      BuildMessageTable("shop", "jobs", kComment, Columns());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(BookkeepingOf(*plain, true).streamed.size(), 5u);
  const absl::StatusOr<MessageTable> limited =
      Build("msgq_concurrency_by=tenant,msgq_concurrency=2");
  ASSERT_TRUE(limited.ok()) << limited.status();
  const BookkeepingColumns b = BookkeepingOf(*limited, true);
  EXPECT_TRUE(b.streamed.empty());
  EXPECT_FALSE(b.fair.has_value());
  // The bookkeeping columns are still found (acks and deletes free slots).
  EXPECT_EQ(b.id, 0u);
  EXPECT_EQ(b.time_acked, 4u);
  const absl::StatusOr<MessageTable> fair = Build(
      "msgq_fair_by=tenant,msgq_concurrency_by=tenant,msgq_concurrency=2");
  ASSERT_TRUE(fair.ok()) << fair.status();
  EXPECT_TRUE(BookkeepingOf(*fair, true).streamed.empty());
  EXPECT_FALSE(BookkeepingOf(*fair, true).fair.has_value());
}

TEST(ConcurrencyStatementTest, InFlightIsARangePerPriorityOfRowsDueLater) {
  EXPECT_EQ(InFlightSql("`shop`.`jobs`", "`Tenant`", {0, 5}, 77),
            "SELECT `Tenant`, `id`, `epoch`, `time_next` FROM `shop`.`jobs` "
            "WHERE `time_acked` IS NULL AND `priority` IN (0,5) AND "
            "`time_next` > 77 AND `epoch` > 0 AND `Tenant` IS NOT NULL");
  EXPECT_EQ(InFlightSql("`shop`.`jobs`", "`Tenant`", {}, 77),
            "SELECT `Tenant`, `id`, `epoch`, `time_next` FROM `shop`.`jobs` "
            "WHERE `time_acked` IS NULL AND `time_next` > 77 AND `epoch` > 0 "
            "AND `Tenant` IS NOT NULL");
}

// Tables without the directive run the statements they ran before it, byte
// for byte; a table with it reads its key with every row and never polls ids.
TEST(ConcurrencyStatementTest, TablesWithoutItKeepTheirStatements) {
  const absl::StatusOr<MessageTable> plain =
      BuildMessageTable("shop", "jobs", kComment, Columns());
  ASSERT_TRUE(plain.ok()) << plain.status();
  MysqlMessageStore store(*plain, MysqlOptions{});
  EXPECT_TRUE(store.polls_ids());
  EXPECT_EQ(store.PollSql(5, 10),
            "SELECT `priority`, `time_next`, `epoch`, `id`, `Tenant`, "
            "`region`, `notes`, `message` FROM `shop`.`jobs` WHERE "
            "`time_acked` IS NULL AND `time_next` <= 5 ORDER BY `priority`, "
            "`time_next`, `id` LIMIT 10");
  EXPECT_EQ(store.PollIdsSql(5, 10),
            "SELECT `id` FROM `shop`.`jobs` WHERE `time_acked` IS NULL AND "
            "`time_next` <= 5 ORDER BY `priority`, `time_next`, `id` LIMIT 10");

  const absl::StatusOr<MessageTable> limited =
      Build("msgq_concurrency_by=tenant,msgq_concurrency=2");
  ASSERT_TRUE(limited.ok()) << limited.status();
  MysqlMessageStore keyed(*limited, MysqlOptions{});
  EXPECT_FALSE(keyed.polls_ids());
  EXPECT_EQ(keyed.PollSql(5, 10),
            "SELECT `priority`, `time_next`, `epoch`, `Tenant`, `id`, "
            "`Tenant`, `region`, `notes`, `message` FROM `shop`.`jobs` WHERE "
            "`time_acked` IS NULL AND `time_next` <= 5 ORDER BY `priority`, "
            "`time_next`, `id` LIMIT 10");
  // PollDue is not how it polls (PollDueByKey is), and a refused column
  // makes every poll say why.
  EXPECT_EQ(keyed.PollDue(5, 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A column the load refuses, on a table built by hand.
  MessageTable bad = *limited;
  bad.settings.concurrency_by = "notes";
  MysqlMessageStore refused(bad, MysqlOptions{});
  KeyRoom room;
  EXPECT_EQ(refused.PollDueByKey(5, 10, room).status().message(),
            "table `shop`.`jobs`: msgq_concurrency_by column notes is text; "
            "msgq needs an integer, char, varchar, binary or varbinary column "
            "(one that an index holds whole)");
  EXPECT_EQ(refused.ReadInFlight(5).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace msgq
