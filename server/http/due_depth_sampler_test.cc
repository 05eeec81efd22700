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

}  // namespace
}  // namespace msgq
