#include "engine/sql/peek_statement.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

MessageTable Jobs(bool optional_columns) {
  MessageTable t;
  t.keyspace = "msgq";
  t.name = "jo`bs";
  t.streamed = {{"id", "bigint", "bigint"}, {"message", "json", "json"}};
  t.has_time_created = optional_columns;
  t.has_time_dead = optional_columns;
  t.last_error_chars = optional_columns ? 64 : 0;
  return t;
}

TEST(PeekStatementTest, NewestFirstWithoutPayload) {
  absl::StatusOr<std::string> sql = PeekSql(Jobs(false), {});
  ASSERT_TRUE(sql.ok()) << sql.status();
  EXPECT_EQ(*sql,
            "SELECT `id`, `priority`, `epoch`, `time_next`, `time_acked` "
            "FROM `msgq`.`jo``bs` ORDER BY `id` DESC LIMIT 50");
}

TEST(PeekStatementTest, NextDueWithOptionalColumnsAndPayload) {
  absl::StatusOr<std::string> sql =
      PeekSql(Jobs(true), {PeekOrder::kNextDue, 100, true});
  ASSERT_TRUE(sql.ok()) << sql.status();
  EXPECT_EQ(*sql,
            "SELECT `id`, `priority`, `epoch`, `time_next`, `time_acked`, "
            "`time_created`, `time_dead`, `last_error`, LEFT(`message`, 256) "
            "AS `message` FROM `msgq`.`jo``bs` WHERE `time_acked` IS NULL "
            "ORDER BY `priority`, `time_next`, `id` LIMIT 100");
}

TEST(PeekStatementTest, RefusesBadLimitsAndOrders) {
  EXPECT_EQ(
      PeekSql(Jobs(false), {PeekOrder::kNewest, 0, false}).status().message(),
      "limit must be 1..100");
  EXPECT_EQ(
      PeekSql(Jobs(false), {PeekOrder::kNewest, 101, false}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePeekOrder("next").value(), PeekOrder::kNextDue);
  EXPECT_EQ(ParsePeekOrder("oldest").status().message(),
            "order must be 'newest' or 'next', not 'oldest'");
}

}  // namespace
}  // namespace msgq
