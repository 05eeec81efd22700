#include "client/cli_stats_format.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

v1::TableStatus Table(const std::string& name, int64_t sent, int64_t acked,
                      int64_t redelivered, int64_t nacked, int64_t died) {
  v1::TableStatus t;
  t.set_keyspace("msgq");
  t.set_name(name);
  t.set_loaded(true);
  t.set_sent(sent);
  t.set_acked(acked);
  t.set_redelivered(redelivered);
  t.set_nacked(nacked);
  t.set_died(died);
  t.set_cached(3);
  t.set_in_flight(2);
  t.set_dead(-1);
  t.set_subscribers(1);
  return t;
}

TEST(CounterRateTest, DifferenceOverElapsed) {
  EXPECT_EQ(CounterRate(10, 35, absl::Seconds(2)), 12.5);
  EXPECT_EQ(CounterRate(7, 7, absl::Seconds(1)), 0.0);
}

TEST(CounterRateTest, ResetOrNoTimeHasNoRate) {
  EXPECT_EQ(CounterRate(100, 4, absl::Seconds(1)), std::nullopt);
  EXPECT_EQ(CounterRate(1, 2, absl::ZeroDuration()), std::nullopt);
}

TEST(StatsFormatTest, TextOfOneServer) {
  const std::vector<StatsSample> before = {
      {"a:1",
       {Table("orders", 10, 8, 1, 0, 0), Table("jobs", 50, 50, 0, 0, 0)}}};
  // jobs' counters went down: msgqd restarted between the samples.
  const std::vector<StatsSample> after = {
      {"a:1",
       {Table("orders", 30, 28, 3, 2, 1), Table("jobs", 5, 5, 0, 0, 0)}}};
  const std::vector<StatsRow> rows =
      ComputeStats(before, after, absl::Seconds(2));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(FormatStatsText(rows, /*show_server=*/false),
            "KEYSPACE  NAME    SENT/S  ACKED/S  REDELIVERED/S  NACKED/S  "
            "DIED/S  CACHED  IN_FLIGHT  DEAD  SUBSCRIBERS\n"
            "msgq      orders  10.0    10.0     1.0            1.0       "
            "0.5     3       2          -     1\n"
            "msgq      jobs    -       -        -              -         "
            "-       3       2          -     1\n");
}

TEST(StatsFormatTest, TextOfSeveralServersOnlyTable) {
  const std::vector<StatsSample> before = {
      {"a:1", {Table("orders", 0, 0, 0, 0, 0)}},
      {"b:22", {Table("orders", 0, 0, 0, 0, 0)}}};
  const std::vector<StatsSample> after = {
      {"a:1", {Table("orders", 4, 4, 0, 0, 0), Table("jobs", 1, 1, 0, 0, 0)}},
      {"b:22", {Table("orders", 2, 1, 0, 0, 0)}}};
  const std::vector<StatsRow> rows =
      ComputeStats(before, after, absl::Seconds(1), "orders");
  EXPECT_EQ(
      FormatStatsText(rows, /*show_server=*/true),
      "SERVER  KEYSPACE  NAME    SENT/S  ACKED/S  REDELIVERED/S  "
      "NACKED/S  DIED/S  CACHED  IN_FLIGHT  DEAD  SUBSCRIBERS\n"
      "a:1     msgq      orders  4.0     4.0      0.0            0.0       "
      "0.0     3       2          -     1\n"
      "b:22    msgq      orders  2.0     1.0      0.0            0.0       "
      "0.0     3       2          -     1\n");
}

TEST(StatsFormatTest, JsonHasCountersRatesAndNullForUnknown) {
  const std::vector<StatsSample> before = {
      {"a:1", {Table("orders", 2, 0, 0, 0, 0)}}};
  const std::vector<StatsSample> after = {
      {"a:1", {Table("orders", 3, 1, 0, 0, 0)}}};
  EXPECT_EQ(
      FormatStatsJson(ComputeStats(before, after, absl::Milliseconds(500)),
                      absl::Milliseconds(500)),
      "{\"interval_s\":0.5,\"tables\":[{\"server\":\"a:1\",\"keyspace\":"
      "\"msgq\",\"name\":\"orders\",\"sent\":3,\"acked\":1,\"redelivered\":0,"
      "\"nacked\":0,\"died\":0,\"sent_per_s\":2.0,\"acked_per_s\":2.0,"
      "\"redelivered_per_s\":0.0,\"nacked_per_s\":0.0,\"died_per_s\":0.0,"
      "\"cached\":3,\"in_flight\":2,\"dead\":-1,\"subscribers\":1}]}");
  // sent went down between the samples (a restart): every rate is null.
  const std::vector<StatsSample> reset = {
      {"a:1", {Table("orders", 9, 0, 0, 0, 0)}}};
  EXPECT_EQ(FormatStatsJson(ComputeStats(reset, after, absl::Seconds(1)),
                            absl::Seconds(1)),
            "{\"interval_s\":1.0,\"tables\":[{\"server\":\"a:1\",\"keyspace\":"
            "\"msgq\",\"name\":\"orders\",\"sent\":3,\"acked\":1,"
            "\"redelivered\":0,\"nacked\":0,\"died\":0,\"sent_per_s\":null,"
            "\"acked_per_s\":null,\"redelivered_per_s\":null,"
            "\"nacked_per_s\":null,\"died_per_s\":null,\"cached\":3,"
            "\"in_flight\":2,\"dead\":-1,\"subscribers\":1}]}");
}

}  // namespace
}  // namespace msgq
