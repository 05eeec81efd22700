// msgq_fair_by (fairness across tenants): the directive, the table check and
// the statements of the fair poll. The cache's order is
// queue/message_cache_fair_test.cc; the behaviour against MariaDB is
// tests/flow_fair_test.cc.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/directives.h"
#include "engine/message_table.h"
#include "engine/sql/fair_poll.h"
#include "engine/sql/mysql_message_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;

constexpr char kComment[] =
    "vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,"
    "vt_cache_size=10000,vt_poller_interval=30";

std::vector<Column> Columns() {
  return {Column{"id", "bigint", "bigint(20)"},
          Column{"priority", "tinyint", "tinyint(4)"},
          Column{"epoch", "bigint", "bigint(20)"},
          Column{"time_next", "bigint", "bigint(20)"},
          Column{"time_acked", "bigint", "bigint(20)"},
          Column{"Tenant", "int", "int(11)"},
          Column{"region", "varchar", "varchar(32)"},
          Column{"blobby", "varbinary", "varbinary(16)"},
          Column{"notes", "text", "text"},
          Column{"message", "json", "longtext"}};
}

absl::StatusOr<MessageTable> Build(const std::string& directive) {
  return BuildMessageTable("shop", "jobs",
                           absl::StrCat(kComment, ",", directive), Columns());
}

TEST(FairByDirectiveTest, ParsesAColumnName) {
  absl::StatusOr<TableSettings> s =
      ParseDirectives(absl::StrCat(kComment, ", msgq_fair_by = tenant "));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->fair_by, "tenant");
  s = ParseDirectives(kComment);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->fair_by, "");
}

TEST(FairByDirectiveTest, RefusesBadNamesAndOrderBy) {
  absl::StatusOr<TableSettings> s =
      ParseDirectives(absl::StrCat(kComment, ",msgq_fair_by=a`b"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "msgq_fair_by: \"a`b\" is not a column name (letters, digits, _ "
            "and $)");
  s = ParseDirectives(
      absl::StrCat(kComment, ",msgq_fair_by=tenant,msgq_order_by=region"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "msgq_fair_by and msgq_order_by cannot be combined (an ordered key "
            "sends one message at a time already)");
}

TEST(FairByTableTest, TakesTheTablesSpellingAndKind) {
  absl::StatusOr<MessageTable> t = Build("msgq_fair_by=tenant");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->settings.fair_by, "Tenant");
  EXPECT_EQ(t->fair_kind, IdKind::kSignedInteger);
  t = Build("msgq_fair_by=region");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->fair_kind, IdKind::kText);
  t = Build("msgq_fair_by=blobby");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->fair_kind, IdKind::kBinary);
}

TEST(FairByTableTest, MissingOwnOrUnindexableColumnIsRefused) {
  absl::StatusOr<MessageTable> t = Build("msgq_fair_by=nope");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.status().message(),
            "table `shop`.`jobs`: msgq_fair_by names column nope which the "
            "table does not have");
  t = Build("msgq_fair_by=time_next");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.status().message(),
            "table `shop`.`jobs`: msgq_fair_by names time_next, one of msgq's "
            "own columns; name a column of yours (the tenant)");
  for (const char* bad : {"notes", "message"}) {
    SCOPED_TRACE(bad);
    t = Build(absl::StrCat("msgq_fair_by=", bad));
    EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(Build("msgq_fair_by=notes").status().message(),
            "table `shop`.`jobs`: msgq_fair_by column notes is text; msgq "
            "needs an integer, char, varchar, binary or varbinary column (one "
            "that an index holds whole)");
}

constexpr char kSelect[] =
    "SELECT `priority`, `time_next`, `epoch`, `Tenant`, `id`, `Tenant`, "
    "`region`, `blobby`, `notes`, `message` FROM `shop`.`jobs`";

TEST(FairPollSqlTest, KeysPageByKeyset) {
  FairPollSql sql("`shop`.`jobs`", kSelect, "Tenant", IdKind::kSignedInteger);
  EXPECT_EQ(*sql.KeysSql(std::nullopt, 1000),
            "SELECT `Tenant` FROM `shop`.`jobs` WHERE `time_acked` IS NULL "
            "GROUP BY `time_acked`, `Tenant` ORDER BY `Tenant` LIMIT 1000");
  EXPECT_EQ(*sql.KeysSql("-42", 2),
            "SELECT `Tenant` FROM `shop`.`jobs` WHERE `time_acked` IS NULL AND "
            "`Tenant` > -42 GROUP BY `time_acked`, `Tenant` ORDER BY `Tenant` "
            "LIMIT 2");
  const absl::StatusOr<std::string> bad = sql.KeysSql("1 OR 1=1", 2);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FairPollSqlTest, RowsAreOneRangeReadPerKeyJoinedByUnionAll) {
  FairPollSql sql("`shop`.`jobs`", "SELECT `id` FROM `shop`.`jobs`", "region",
                  IdKind::kText);
  const std::vector<FairPollSql::Slice> slices = {
      {std::nullopt, 0, 3}, {"eu'", 5, 2}, {"", 0, 1}};
  EXPECT_THAT(
      sql.RowsSql(slices, 77, 100000),
      ElementsAre(
          "(SELECT `id` FROM `shop`.`jobs` WHERE `time_acked` IS NULL AND "
          "`region` IS NULL AND `time_next` <= 77 ORDER BY `priority`, "
          "`time_next`, `id` LIMIT 0, 3) UNION ALL (SELECT `id` FROM "
          "`shop`.`jobs` WHERE `time_acked` IS NULL AND `region` = _utf8mb4 "
          "X'657527' AND `time_next` <= 77 ORDER BY `priority`, `time_next`, "
          "`id` LIMIT 5, 2) UNION ALL (SELECT `id` FROM `shop`.`jobs` WHERE "
          "`time_acked` IS NULL AND `region` = _utf8mb4 X'' AND `time_next` "
          "<= 77 ORDER BY `priority`, `time_next`, `id` LIMIT 0, 1)"));
}

TEST(FairPollSqlTest, SplitsLongStatementsAndSkipsKeysSqlCannotName) {
  FairPollSql sql("`d`.`t`", "SELECT `id` FROM `d`.`t`", "k",
                  IdKind::kSignedInteger);
  const std::vector<FairPollSql::Slice> slices = {
      {"1", 0, 1}, {"x", 0, 1}, {"2", 0, 1}};
  const std::vector<std::string> out = sql.RowsSql(slices, 9, 150);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0],
            "(SELECT `id` FROM `d`.`t` WHERE `time_acked` IS NULL AND `k` = 1 "
            "AND `time_next` <= 9 ORDER BY `priority`, `time_next`, `id` "
            "LIMIT 0, 1)");
  EXPECT_NE(out[1].find("`k` = 2 "), std::string::npos) << out[1];
}

TEST(FairPollSqlTest, ForcesTheFairIndexWhenGiven) {
  FairPollSql sql("`d`.`t`", "SELECT `id` FROM `d`.`t`", "k",
                  IdKind::kSignedInteger);
  EXPECT_THAT(sql.RowsSql({{"1", 0, 1}}, 9, 100000, "fair`idx"),
              ElementsAre("(SELECT `id` FROM `d`.`t` FORCE INDEX (`fair``idx`) "
                          "WHERE `time_acked` IS NULL AND `k` = 1 AND "
                          "`time_next` <= 9 ORDER BY `priority`, `time_next`, "
                          "`id` LIMIT 0, 1)"));
}

TEST(FairByStatementTest, FairTablesReadTheKeyWithEveryRow) {
  const absl::StatusOr<MessageTable> t = Build("msgq_fair_by=tenant");
  ASSERT_TRUE(t.ok()) << t.status();
  MysqlMessageStore store(*t, MysqlOptions{});
  EXPECT_EQ(store.PollSql(5, 10),
            absl::StrCat(kSelect,
                         " WHERE `time_acked` IS NULL AND `time_next` <= 5 "
                         "ORDER BY `priority`, `time_next`, `id` LIMIT 10"));
}

}  // namespace
}  // namespace msgq
