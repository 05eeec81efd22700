#include "engine/sql/peek_statement.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
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

TEST(PeekStatementTest, FiltersByStateAtNow) {
  PeekRequest request;
  request.limit = 20;
  request.now_ns = 1000;
  const std::string state =
      "CASE WHEN `time_acked` IS NOT NULL THEN 'acked' WHEN `time_next` IS "
      "NULL THEN 'dead' WHEN `time_next` <= 1000 THEN 'ready' WHEN `epoch` > "
      "0 THEN 'in_flight' ELSE 'scheduled' END AS `msgq_state`";
  const std::string head =
      "SELECT `id`, `priority`, `epoch`, `time_next`, `time_acked`, " + state +
      " FROM `msgq`.`jo``bs`";
  const std::pair<PeekState, std::string> cases[] = {
      {PeekState::kAny, ""},
      {PeekState::kReady,
       " WHERE `time_acked` IS NULL AND `time_next` <= 1000"},
      {PeekState::kScheduled,
       " WHERE `time_acked` IS NULL AND `time_next` > 1000 AND `epoch` = 0"},
      {PeekState::kInFlight,
       " WHERE `time_acked` IS NULL AND `time_next` > 1000 AND `epoch` > 0"},
      {PeekState::kDead, " WHERE `time_acked` IS NULL AND `time_next` IS NULL"},
      {PeekState::kAcked, " WHERE `time_acked` IS NOT NULL"},
  };
  for (const auto& [s, where] : cases) {
    request.state = s;
    absl::StatusOr<std::string> sql = PeekSql(Jobs(false), request);
    ASSERT_TRUE(sql.ok()) << sql.status();
    EXPECT_EQ(*sql, head + where + " ORDER BY `id` DESC LIMIT 20");
  }
  request.order = PeekOrder::kNextDue;
  request.state = PeekState::kDead;
  EXPECT_EQ(PeekSql(Jobs(false), request).value(),
            head +
                " WHERE `time_acked` IS NULL AND `time_next` IS NULL ORDER BY "
                "`priority`, `time_next`, `id` LIMIT 20");
  request.state = PeekState::kAcked;
  EXPECT_EQ(PeekSql(Jobs(false), request).status().message(),
            "order 'next' lists unacked messages: state 'acked' needs order "
            "'newest'");
  request.state = PeekState::kDead;
  request.now_ns = 0;
  EXPECT_EQ(PeekSql(Jobs(false), request).status().message(),
            "a state needs now_ns");
  EXPECT_EQ(ParsePeekState("in_flight").value(), PeekState::kInFlight);
  EXPECT_EQ(ParsePeekState("acked").value(), PeekState::kAcked);
  EXPECT_EQ(ParsePeekState("").value(), PeekState::kAny);
  EXPECT_EQ(ParsePeekState("done").status().message(),
            "state must be 'ready', 'scheduled', 'in_flight', 'dead' or "
            "'acked', not 'done'");
}

TEST(PeekStatementTest, ReadsOneMessageByItsIdLiteral) {
  MessageTable t = Jobs(true);
  t.id_kind = IdKind::kSignedInteger;
  t.columns = {{"id", "bigint", "bigint"},
               {"priority", "tinyint", "tinyint"},
               {"epoch", "bigint", "bigint"},
               {"time_next", "bigint", "bigint"},
               {"time_acked", "bigint", "bigint"},
               {"message", "json", "json"},
               {"traceparent", "varchar", "varchar(55)"},
               {"time_created", "bigint", "bigint"},
               {"time_dead", "bigint", "bigint"},
               {"last_error", "varchar", "varchar(64)"}};
  absl::StatusOr<MessageRead> read = MessageSql(t, "42", 7);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->fixed,
            (std::vector<std::string>{"id", "priority", "epoch", "time_next",
                                      "time_acked", "time_created", "time_dead",
                                      "last_error", "msgq_state"}));
  EXPECT_EQ(read->values, (std::vector<std::string>{"message", "traceparent"}));
  EXPECT_EQ(read->sql,
            "SELECT `id`, `priority`, `epoch`, `time_next`, `time_acked`, "
            "`time_created`, `time_dead`, `last_error`, CASE WHEN "
            "`time_acked` IS NOT NULL THEN 'acked' WHEN `time_next` IS NULL "
            "THEN 'dead' WHEN `time_next` <= 7 THEN 'ready' WHEN `epoch` > 0 "
            "THEN 'in_flight' ELSE 'scheduled' END AS `msgq_state`, "
            "LEFT(`message`, 4096), CHAR_LENGTH(`message`) > 4096, "
            "LEFT(`traceparent`, 4096), CHAR_LENGTH(`traceparent`) > 4096 "
            "FROM `msgq`.`jo``bs` WHERE `id` = 42");
  t.id_kind = IdKind::kText;
  const std::string text_sql = MessageSql(t, "a'b", 7).value().sql;
  EXPECT_TRUE(absl::EndsWith(
      text_sql, " FROM `msgq`.`jo``bs` WHERE `id` = _utf8mb4 X'612762'"))
      << text_sql;
  t.id_kind = IdKind::kSignedInteger;
  EXPECT_EQ(MessageSql(t, "4 OR 1=1", 7).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PeekStatementTest, DeadSelectionStatements) {
  MessageTable t = Jobs(false);
  t.id_kind = IdKind::kSignedInteger;
  EXPECT_EQ(DeadStateSql(t, {"3", "007"}, 9).value(),
            "SELECT `id`, CASE WHEN `time_acked` IS NOT NULL THEN 'acked' WHEN "
            "`time_next` IS NULL THEN 'dead' WHEN `time_next` <= 9 THEN "
            "'ready' WHEN `epoch` > 0 THEN 'in_flight' ELSE 'scheduled' END AS "
            "`msgq_state` FROM `msgq`.`jo``bs` WHERE `id` IN (3, 7)");
  EXPECT_EQ(DeadDeleteSql(t, {"3", "7"}).value(),
            "DELETE FROM `msgq`.`jo``bs` WHERE `id` IN (3, 7) AND `time_acked` "
            "IS NULL AND `time_next` IS NULL");
  EXPECT_EQ(DeadDeleteSql(t, {}).status().message(), "no id given");
  EXPECT_EQ(DeadDeleteSql(t, {"3", "x'"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace msgq
