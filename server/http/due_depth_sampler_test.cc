#include "server/http/due_depth_sampler.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

// Each table is read once per interval however often SampleDue runs; a
// failed read keeps the previous sample; a table gone is forgotten.
TEST(DueDepthSamplerTest, ReadsEachTableOncePerInterval) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  std::vector<DueDepthSampler::TableKey> tables = {{"ks", "a"}, {"ks", "b"}};
  std::map<std::string, int> reads;
  bool fail = false;
  DueDepthSampler sampler(
      [&] { return tables; },
      [&](const DueDepthSampler::TableKey& t, int64_t now_ns,
          int64_t cap) -> absl::StatusOr<DueDepth> {
        ++reads[t.second];
        if (fail) return absl::UnavailableError("down");
        return DueDepth{reads[t.second] * 10, false, now_ns - 5'000'000'000};
      },
      &clock, {.interval = absl::Seconds(10), .cap = 100});
  EXPECT_EQ(sampler.Get({"ks", "a"}), std::nullopt);
  EXPECT_EQ(sampler.SampleDue(), 2);
  EXPECT_EQ(sampler.SampleDue(), 0);
  clock.Advance(absl::Seconds(9));
  EXPECT_EQ(sampler.SampleDue(), 0);
  ASSERT_TRUE(sampler.Get({"ks", "a"}).has_value());
  EXPECT_EQ(sampler.Get({"ks", "a"})->depth.count, 10);
  EXPECT_EQ(sampler.Get({"ks", "a"})->now_ns, 1000'000'000'000);
  EXPECT_EQ(sampler.Get({"ks", "a"})->depth.oldest_due_ns, 995'000'000'000);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(sampler.SampleDue(), 2);
  EXPECT_EQ(sampler.Get({"ks", "b"})->depth.count, 20);
  fail = true;
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(sampler.SampleDue(), 2);
  EXPECT_EQ(sampler.Get({"ks", "b"})->depth.count, 20);
  EXPECT_EQ(reads["a"], 3);
  tables = {{"ks", "a"}};
  sampler.SampleDue();
  EXPECT_EQ(sampler.Get({"ks", "b"}), std::nullopt);
}

// The history list length is read once per interval with the tables'
// pass; a failed read keeps the last value; none before the first success.
TEST(DueDepthSamplerTest, ReadsTheHistoryLengthOncePerInterval) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  int reads = 0;
  absl::Status fail = absl::OkStatus();
  DueDepthSampler sampler(
      [] { return std::vector<DueDepthSampler::TableKey>{}; },
      [](const DueDepthSampler::TableKey&, int64_t,
         int64_t) -> absl::StatusOr<DueDepth> { return DueDepth{}; },
      &clock, {.interval = absl::Seconds(10)},
      [&]() -> absl::StatusOr<int64_t> {
        ++reads;
        if (!fail.ok()) return fail;
        return 100 * reads;
      });
  EXPECT_EQ(sampler.HistoryLength(), std::nullopt);
  fail = absl::FailedPreconditionError("no table is loaded");
  sampler.SampleDue();
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(sampler.HistoryLength(), std::nullopt);
  fail = absl::OkStatus();
  clock.Advance(absl::Seconds(9));
  sampler.SampleDue();
  EXPECT_EQ(reads, 1);
  clock.Advance(absl::Seconds(1));
  sampler.SampleDue();
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(sampler.HistoryLength(), 200);
  fail = absl::UnavailableError("down");
  clock.Advance(absl::Seconds(10));
  sampler.SampleDue();
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(sampler.HistoryLength(), 200);
  fail = absl::OkStatus();
  clock.Advance(absl::Seconds(10));
  sampler.SampleDue();
  EXPECT_EQ(sampler.HistoryLength(), 400);
}

TEST(DueDepthSamplerTest, ParsesTheHistoryLength) {
  QueryResult one{{"VARIABLE_VALUE"}, {{std::string("1234")}}};
  EXPECT_EQ(ParseInnodbHistory(one).value(), 1234);
  QueryResult none{{"VARIABLE_VALUE"}, {}};
  EXPECT_EQ(ParseInnodbHistory(none).status().code(),
            absl::StatusCode::kInternal);
  QueryResult text{{"VARIABLE_VALUE"}, {{std::string("many")}}};
  EXPECT_EQ(ParseInnodbHistory(text).status().code(),
            absl::StatusCode::kInternal);
  QueryResult null{{"VARIABLE_VALUE"}, {{std::nullopt}}};
  EXPECT_EQ(ParseInnodbHistory(null).status().code(),
            absl::StatusCode::kInternal);
}

// The oldest transaction is read in the history's pass, once per interval:
// a refused read keeps its error (and no transaction) until a read succeeds;
// "no table is loaded" changes nothing.
TEST(DueDepthSamplerTest, ReadsTheOldestTransactionWithTheHistory) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  int reads = 0;
  absl::StatusOr<std::optional<OldestTransaction>> next =
      absl::FailedPreconditionError("no table is loaded");
  DueDepthSampler sampler(
      [] { return std::vector<DueDepthSampler::TableKey>{}; },
      [](const DueDepthSampler::TableKey&, int64_t,
         int64_t) -> absl::StatusOr<DueDepth> { return DueDepth{}; },
      &clock, {.interval = absl::Seconds(10)}, nullptr,
      [&]() -> absl::StatusOr<std::optional<OldestTransaction>> {
        ++reads;
        return next;
      });
  const auto empty = sampler.OldestTransactionSample();
  EXPECT_FALSE(empty.read);
  EXPECT_EQ(empty.error, "");
  sampler.SampleDue();
  EXPECT_EQ(reads, 1);
  EXPECT_FALSE(sampler.OldestTransactionSample().read);
  EXPECT_EQ(sampler.OldestTransactionSample().error, "");

  const OldestTransaction open{42,          310,    "app",
                               "localhost", "shop", "UPDATE t SET n = 1"};
  next = std::optional<OldestTransaction>(open);
  clock.Advance(absl::Seconds(9));
  sampler.SampleDue();
  EXPECT_EQ(reads, 1);
  clock.Advance(absl::Seconds(1));
  sampler.SampleDue();
  EXPECT_EQ(reads, 2);
  auto sample = sampler.OldestTransactionSample();
  EXPECT_TRUE(sample.read);
  EXPECT_EQ(sample.oldest, open);
  EXPECT_EQ(sample.error, "");

  next = absl::PermissionDeniedError(
      "Access denied; you need the PROCESS "
      "privilege");
  clock.Advance(absl::Seconds(10));
  sampler.SampleDue();
  sample = sampler.OldestTransactionSample();
  EXPECT_FALSE(sample.read);
  EXPECT_EQ(sample.oldest, std::nullopt);
  EXPECT_EQ(sample.error, "Access denied; you need the PROCESS privilege");

  next = std::optional<OldestTransaction>();  // none open
  clock.Advance(absl::Seconds(10));
  sampler.SampleDue();
  sample = sampler.OldestTransactionSample();
  EXPECT_TRUE(sample.read);
  EXPECT_EQ(sample.oldest, std::nullopt);
  EXPECT_EQ(sample.error, "");
  EXPECT_EQ(reads, 4);
}

TEST(DueDepthSamplerTest, ParsesTheOldestTransaction) {
  const std::vector<std::string> columns = {"id", "s", "u", "h", "d", "i"};
  QueryResult none{columns, {}};
  EXPECT_EQ(ParseOldestTransaction(none).value(), std::nullopt);
  QueryResult idle{
      columns,
      {{std::string("7"), std::string("65"), std::string("app"),
        std::string("10.0.0.5:51334"), std::nullopt, std::nullopt}}};
  EXPECT_EQ(ParseOldestTransaction(idle).value(),
            (OldestTransaction{7, 65, "app", "10.0.0.5:51334", "", ""}));
  QueryResult no_id{columns,
                    {{std::nullopt, std::string("1"), std::nullopt,
                      std::nullopt, std::nullopt, std::nullopt}}};
  EXPECT_EQ(ParseOldestTransaction(no_id).status().code(),
            absl::StatusCode::kInternal);
  QueryResult short_row{{"id"}, {{std::string("7")}}};
  EXPECT_EQ(ParseOldestTransaction(short_row).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace msgq
