#include "client/cli_format.h"

#include <memory>
#include <string>

#include "client/internal/decode_row.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::HasSubstr;

Message MakeMessage(std::vector<Schema::Column> columns,
                    std::vector<std::optional<std::string>> values) {
  absl::StatusOr<std::shared_ptr<const Schema>> schema =
      Schema::FromColumns(std::move(columns));
  EXPECT_TRUE(schema.ok());
  v1::Row row;
  for (const auto& value : values) {
    row.add_lengths(value.has_value() ? static_cast<int64_t>(value->size())
                                      : -1);
    if (value.has_value()) row.mutable_values()->append(*value);
  }
  absl::StatusOr<Message> message = DecodeRow(*schema, row);
  EXPECT_TRUE(message.ok()) << message.status();
  return *message;
}

TEST(JsonQuoteTest, EscapesAndKeepsUtf8) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
  EXPECT_EQ(JsonQuote("h\xC3\xA9llo \xE2\x82\xAC"),
            "\"h\xC3\xA9llo \xE2\x82\xAC\"");
  // Invalid UTF-8 bytes become \u00XX, so the output is always valid JSON.
  EXPECT_EQ(JsonQuote("\xFF\xC3"), R"("\u00ff\u00c3")");
  EXPECT_EQ(JsonQuote(std::string("\0", 1)), R"("\u0000")");
  // An encoded surrogate is not valid UTF-8.
  EXPECT_EQ(JsonQuote("\xED\xA0\x80"), R"("\u00ed\u00a0\u0080")");
}

TEST(FormatMessageJsonTest, NumbersNullsAndStrings) {
  Message msg =
      MakeMessage({{"id", "bigint"},
                   {"priority", "int"},
                   {"price", "decimal"},
                   {"message", "text"},
                   {"note", "varchar"},
                   {"code", "varchar"}},
                  {"17", "-3", "1.50", "hi \"you\"", std::nullopt, "42"});
  EXPECT_EQ(FormatMessageJson(msg),
            R"({"id":17,"priority":-3,"price":1.50,"message":"hi \"you\"",)"
            R"("note":null,"code":"42"})");
}

TEST(FormatMessageJsonTest, NonJsonNumbersInNumericColumnsAreStrings) {
  Message msg = MakeMessage({{"id", "bigint"}, {"f", "double"}, {"g", "float"}},
                            {"1", "inf", "01"});
  EXPECT_EQ(FormatMessageJson(msg), R"({"id":1,"f":"inf","g":"01"})");
}

TEST(FormatMessageTextTest, BareWordsQuotedTextAndNull) {
  Message msg = MakeMessage(
      {{"id", "bigint"},
       {"a", "text"},
       {"b", "text"},
       {"c", "text"},
       {"d", "text"},
       {"e", "text"}},
      {"5", "plain-word_1.2", "two words", std::nullopt, "NULL", ""});
  EXPECT_EQ(FormatMessageText(msg),
            R"(id=5 a=plain-word_1.2 b="two words" c=NULL d="NULL" e="")");
}

TEST(FormatMessageTextWithEpochTest, AppendsANonZeroEpoch) {
  absl::StatusOr<std::shared_ptr<const Schema>> schema =
      Schema::FromColumns({{"id", "bigint"}, {"message", "text"}});
  ASSERT_TRUE(schema.ok());
  v1::Row row;
  row.add_lengths(2);
  row.add_lengths(2);
  row.set_values("12hi");
  row.set_epoch(4);
  absl::StatusOr<Message> msg = DecodeRow(*schema, row);
  ASSERT_TRUE(msg.ok());
  EXPECT_EQ(FormatMessageTextWithEpoch(*msg), "id=12 message=hi epoch=4");
  row.set_epoch(0);
  msg = DecodeRow(*schema, row);
  ASSERT_TRUE(msg.ok());
  EXPECT_EQ(FormatMessageTextWithEpoch(*msg), "id=12 message=hi");
}

v1::DeadMessage DeadMessage(std::string id, int64_t epoch,
                            std::string last_error, absl::Time died) {
  v1::DeadMessage m;
  m.set_id(std::move(id));
  m.set_epoch(epoch);
  m.set_last_error(std::move(last_error));
  if (died != absl::UnixEpoch()) m.set_time_dead(absl::ToUnixNanos(died));
  return m;
}

TEST(FormatDeadTextTest, AlignsAgesAndErrors) {
  const absl::Time now = absl::FromUnixSeconds(1700000000);
  EXPECT_EQ(
      FormatDeadText(
          {DeadMessage("7", 5, "connection refused",
                       now - absl::Seconds(125) - absl::Milliseconds(900)),
           DeadMessage("1234", 0, "", absl::UnixEpoch()),
           DeadMessage("a b", 12, "line1\nline2", now + absl::Seconds(3))},
          now),
      "ID     EPOCH  DIED      LAST_ERROR\n"
      "7      5      2m5s ago  connection refused\n"
      "1234   0      -         -\n"
      "\"a b\"  12     0s ago    \"line1\\nline2\"\n");
  EXPECT_EQ(FormatDeadText({}, now), "ID  EPOCH  DIED  LAST_ERROR\n");
}

TEST(FormatDeadJsonTest, UsesProtoFieldNames) {
  EXPECT_EQ(FormatDeadJson({DeadMessage("7", 5, "boom", absl::UnixEpoch())}),
            R"({"messages":[{"id":"7","epoch":5,"last_error":"boom",)"
            R"("time_dead":0,"time_created":0}]})");
  EXPECT_EQ(FormatDeadJson({}), R"({"messages":[]})");
}

v1::TableStatus Loaded() {
  v1::TableStatus t;
  t.set_keyspace("msgq");
  t.set_name("orders");
  t.set_loaded(true);
  t.set_discovery("binlog");
  t.set_subscribers(2);
  t.set_cached(10);
  t.set_in_flight(3);
  t.set_dead(4);
  v1::TableSettings* s = t.mutable_settings();
  s->set_ack_wait(30);
  s->set_purge_after(86400);
  s->set_batch_size(10);
  s->set_cache_size(10000);
  s->set_poller_interval(0.5);
  s->add_message_cols("id");
  s->add_message_cols("message");
  return t;
}

v1::TableStatus Broken() {
  v1::TableStatus t;
  t.set_keyspace("msgq");
  t.set_name("broken_table");
  t.set_error("vt_ack_wait is missing");
  return t;
}

TEST(FormatTablesTextTest, AlignsColumns) {
  EXPECT_EQ(
      FormatTablesText({Loaded(), Broken()}),
      "KEYSPACE  NAME          STATUS  DISCOVERY  SUBSCRIBERS  CACHED  "
      "IN_FLIGHT  DEAD  DETAILS\n"
      "msgq      orders        loaded  binlog     2            10      3    "
      "      4     ack_wait=30s purge_after=86400s batch_size=10 "
      "cache_size=10000 poller_interval=0.5s message_cols=id,message\n"
      "msgq      broken_table  error   -          0            -       -    "
      "      -     vt_ack_wait is missing\n");
}

TEST(FormatTablesTextTest, NoTablesPrintsTheHeader) {
  EXPECT_EQ(FormatTablesText({}),
            "KEYSPACE  NAME  STATUS  DISCOVERY  SUBSCRIBERS  CACHED  "
            "IN_FLIGHT  DEAD  DETAILS\n");
}

v1::Group Group(const std::string& name, const std::string& floor,
                const std::string& filter) {
  v1::Group g;
  g.set_keyspace("msgq");
  g.set_table("orders");
  g.set_name(name);
  g.set_floor_gtid(floor);
  g.set_filter(filter);
  g.set_created_at_ns(int64_t{1796659805} * 1000000000 + 999);
  return g;
}

TEST(FormatGroupsTest, TextAlignsAndNamesTheEarliestFloor) {
  EXPECT_EQ(FormatGroupsText(
                {Group("billing", "", ""),
                 Group("search", "0-1-4711,1-2-7", "type IN ('a', 'b')")}),
            "KEYSPACE  TABLE   GROUP    FLOOR           CREATED             "
            "  FILTER\n"
            "msgq      orders  billing  earliest        2026-12-07T16:10:05Z "
            " -\n"
            "msgq      orders  search   0-1-4711,1-2-7  2026-12-07T16:10:05Z "
            " type IN ('a', 'b')\n");
  EXPECT_EQ(FormatGroupsText({}),
            "KEYSPACE  TABLE  GROUP  FLOOR  CREATED  FILTER\n");
}

TEST(FormatGroupsTest, Json) {
  EXPECT_EQ(FormatGroupsJson({Group("search", "0-1-5", "n = 'a\"b'")}),
            "{\"groups\":[{\"keyspace\":\"msgq\",\"table\":\"orders\","
            "\"name\":\"search\",\"floor_gtid\":\"0-1-5\",\"filter\":"
            "\"n = 'a\\\"b'\",\"created_at_ns\":1796659805000000999,"
            "\"paused\":false}]}");
  EXPECT_EQ(FormatGroupsJson({}), "{\"groups\":[]}");
}

TEST(FormatSettingsTest, ShowsBackoffOnlyWhenSet) {
  v1::TableSettings s = Loaded().settings();
  EXPECT_THAT(FormatSettings(s), ::testing::Not(HasSubstr("backoff")));
  s.set_min_backoff(1);
  s.set_max_backoff(60);
  EXPECT_THAT(FormatSettings(s), HasSubstr("min_backoff=1s max_backoff=60s"));
}

TEST(FormatSettingsTest, ShowsFailureLimitsOnlyWhenSet) {
  v1::TableSettings s = Loaded().settings();
  EXPECT_THAT(FormatSettings(s), ::testing::Not(HasSubstr("max_attempts")));
  s.set_max_attempts(5);
  s.set_max_age(3600);
  s.set_dead_retention(86400);
  EXPECT_THAT(FormatSettings(s),
              HasSubstr(" max_attempts=5 max_age=3600s dead_retention=86400s"));
}

TEST(FormatSettingsTest, ShowsOrderAndFairKeysOnlyWhenSet) {
  v1::TableSettings s = Loaded().settings();
  EXPECT_THAT(FormatSettings(s), ::testing::Not(HasSubstr("_by=")));
  s.set_fair_by("tenant_id");
  EXPECT_THAT(FormatSettings(s), ::testing::EndsWith(" fair_by=tenant_id"));
  s.set_fair_by("");
  s.set_order_by("order_id");
  EXPECT_THAT(FormatSettings(s), ::testing::EndsWith(" order_by=order_id"));
}

TEST(FormatTablesJsonTest, UsesProtoFieldNamesAndPrintsDefaults) {
  const std::string json = FormatTablesJson({Loaded(), Broken()});
  EXPECT_THAT(json, HasSubstr(R"("in_flight":"3")"));  // int64 as string
  EXPECT_THAT(json, HasSubstr(R"("ack_wait":30)"));
  EXPECT_THAT(json, HasSubstr(R"("loaded":false)"));
  EXPECT_THAT(json, HasSubstr(R"("error":"vt_ack_wait is missing")"));
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace msgq
