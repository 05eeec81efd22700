#include "engine/queue/redelivery_backoff.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;

// The largest delay PostponeDelayNanos gives any part of the sum: 100 years.
constexpr int64_t kHundredYearsNanos =
    int64_t{100} * 365 * 24 * 3600 * 1'000'000'000;

TableSettings Settings(absl::Duration ack_wait, absl::Duration min_backoff,
                       absl::Duration max_backoff = absl::InfiniteDuration()) {
  TableSettings s;
  s.ack_wait = ack_wait;
  s.min_backoff = min_backoff;
  s.max_backoff = max_backoff;
  s.purge_after = absl::Hours(1);
  s.batch_size = 1;
  s.cache_size = 1;
  s.poller_interval = absl::Seconds(30);
  return s;
}

std::vector<int64_t> Delays(const TableSettings& s, double jitter, int epochs) {
  std::vector<int64_t> out;
  for (int e = 0; e < epochs; ++e) {
    out.push_back(PostponeDelayNanos(s, e, jitter));
  }
  return out;
}

const double kJustBelowMaxJitter = std::nextafter(kMaxJitter, 0.0);

TEST(PostponeDelayNanosTest, DoublesPerEpochWithUnitJitter) {
  // ack_wait 30s, min_backoff 30s (the default), no max: 30 + 30 * 2^e.
  const TableSettings s = Settings(absl::Seconds(30), absl::Seconds(30));
  EXPECT_THAT(Delays(s, 1.0, 6),
              ElementsAre(60 * kSecond, 90 * kSecond, 150 * kSecond,
                          270 * kSecond, 510 * kSecond, 990 * kSecond));
}

TEST(BackoffNanosTest, IsThePostponeDelayWithoutTheAckWait) {
  // A nack without a delay: min_backoff 10s doubling, capped at 60s.
  TableSettings s = Settings(absl::Seconds(30), absl::Seconds(10));
  s.max_backoff = absl::Seconds(60);
  EXPECT_EQ(RedeliveryBackoffNanos(s, 0, 1.0), 10 * kSecond);
  EXPECT_EQ(RedeliveryBackoffNanos(s, 2, 1.0), 40 * kSecond);
  EXPECT_EQ(RedeliveryBackoffNanos(s, 3, 1.0), 60 * kSecond);
  EXPECT_EQ(PostponeDelayNanos(s, 2, 1.0), 70 * kSecond);
}

TEST(PostponeDelayNanosTest, LowestJitterIsClampedToMinBackoff) {
  const TableSettings s = Settings(absl::Seconds(30), absl::Seconds(30));
  // Epoch 0: floor(30s * 0.666) = 19.98s < min_backoff: 30s is used.
  EXPECT_THAT(Delays(s, kMinJitter, 6),
              ElementsAre(int64_t{60'000'000'000}, int64_t{69'960'000'000},
                          int64_t{109'920'000'000}, int64_t{189'840'000'000},
                          int64_t{349'680'000'000}, int64_t{669'360'000'000}));
}

TEST(PostponeDelayNanosTest, HighestJitterIsFloored) {
  const TableSettings s = Settings(absl::Seconds(30), absl::Seconds(30));
  EXPECT_THAT(
      Delays(s, kJustBelowMaxJitter, 6),
      ElementsAre(int64_t{69'989'999'999}, int64_t{109'979'999'999},
                  int64_t{189'959'999'999}, int64_t{349'919'999'999},
                  int64_t{669'839'999'999}, int64_t{1'309'679'999'999}));
}

TEST(PostponeDelayNanosTest, MinBackoffIndependentOfAckWait) {
  const TableSettings s = Settings(absl::Seconds(2), absl::Seconds(1));
  EXPECT_THAT(Delays(s, kMinJitter, 6),
              ElementsAre(int64_t{3'000'000'000}, int64_t{3'332'000'000},
                          int64_t{4'664'000'000}, int64_t{7'328'000'000},
                          int64_t{12'656'000'000}, int64_t{23'312'000'000}));
}

TEST(PostponeDelayNanosTest, ClampedByMaxBackoff) {
  const TableSettings s =
      Settings(absl::Seconds(1), absl::Milliseconds(500), absl::Seconds(10));
  EXPECT_THAT(Delays(s, 1.0, 8),
              ElementsAre(int64_t{1'500'000'000}, int64_t{2'000'000'000},
                          int64_t{3'000'000'000}, int64_t{5'000'000'000},
                          int64_t{9'000'000'000}, int64_t{11'000'000'000},
                          int64_t{11'000'000'000}, int64_t{11'000'000'000}));
  EXPECT_THAT(Delays(s, kJustBelowMaxJitter, 8),
              ElementsAre(int64_t{1'666'499'999}, int64_t{2'332'999'999},
                          int64_t{3'665'999'999}, int64_t{6'331'999'999},
                          int64_t{11'000'000'000}, int64_t{11'000'000'000},
                          int64_t{11'000'000'000}, int64_t{11'000'000'000}));
}

TEST(PostponeDelayNanosTest, MaxEqualToMinGivesAConstantDelay) {
  const TableSettings s =
      Settings(absl::Seconds(5), absl::Seconds(3), absl::Seconds(3));
  for (int e = 0; e < 70; ++e) {
    for (double j : {kMinJitter, 1.0, kJustBelowMaxJitter}) {
      EXPECT_EQ(PostponeDelayNanos(s, e, j), 8 * kSecond)
          << "epoch " << e << " jitter " << j;
    }
  }
}

TEST(PostponeDelayNanosTest, NegativeEpochCountsAsZero) {
  const TableSettings s = Settings(absl::Seconds(30), absl::Seconds(30));
  EXPECT_EQ(PostponeDelayNanos(s, -1, 1.0), 60 * kSecond);
  EXPECT_EQ(PostponeDelayNanos(s, std::numeric_limits<int64_t>::min(), 1.0),
            60 * kSecond);
}

TEST(PostponeDelayNanosTest, HugeEpochSaturatesWithoutOverflow) {
  const TableSettings s = Settings(absl::Seconds(30), absl::Seconds(30));
  const int64_t expected = 30 * kSecond + kHundredYearsNanos;
  for (int64_t e :
       {int64_t{60}, int64_t{63}, int64_t{64}, int64_t{1000}, int64_t{1001},
        int64_t{1'000'000}, std::numeric_limits<int64_t>::max()}) {
    for (double j : {kMinJitter, 1.0, kJustBelowMaxJitter}) {
      const int64_t d = PostponeDelayNanos(s, e, j);
      EXPECT_EQ(d, expected) << "epoch " << e << " jitter " << j;
    }
  }
  // Monotonic up to saturation.
  int64_t previous = 0;
  for (int64_t e = 0; e < 200; ++e) {
    const int64_t d = PostponeDelayNanos(s, e, 1.0);
    EXPECT_GT(d, 0) << e;
    EXPECT_GE(d, previous) << e;
    previous = d;
  }
}

TEST(PostponeDelayNanosTest, HugeEpochWithMaxBackoffGivesMax) {
  const TableSettings s =
      Settings(absl::Seconds(30), absl::Seconds(30), absl::Hours(1));
  for (int64_t e : {int64_t{40}, int64_t{1000}, int64_t{1'000'000'000}}) {
    EXPECT_EQ(PostponeDelayNanos(s, e, kJustBelowMaxJitter),
              30 * kSecond + 3600 * kSecond)
        << e;
  }
}

TEST(PostponeDelayNanosTest, HugeDurationsSaturateAndStillAddToNow) {
  // Durations beyond 100 years (or infinite) count as 100 years each, so
  // now + delay stays within int64 nanoseconds.
  const TableSettings s =
      Settings(absl::Hours(24 * 365 * 1000), absl::InfiniteDuration());
  const int64_t d = PostponeDelayNanos(s, 7, 1.0);
  EXPECT_EQ(d, 2 * kHundredYearsNanos);
  const int64_t now = absl::ToUnixNanos(absl::FromUnixSeconds(1'700'000'000));
  EXPECT_LT(d, std::numeric_limits<int64_t>::max() - now);
}

TEST(PostponeDelayNanosTest, SubNanosecondFractionsAreFloored) {
  // floor(1ns * 1.333-) = 1ns; below min_backoff the min is used.
  EXPECT_EQ(
      PostponeDelayNanos(Settings(absl::Nanoseconds(0), absl::Nanoseconds(1)),
                         0, kJustBelowMaxJitter),
      1);
  EXPECT_EQ(
      PostponeDelayNanos(Settings(absl::Nanoseconds(0), absl::Nanoseconds(3)),
                         1, kMinJitter),
      3);  // floor(6 * 0.666) = 3 = min_backoff
  EXPECT_EQ(
      PostponeDelayNanos(Settings(absl::Nanoseconds(0), absl::Nanoseconds(3)),
                         2, kMinJitter),
      7);  // floor(12 * 0.666) = 7
}

TEST(SeededJitterTest, StaysInRange) {
  SeededJitter jitter(42);
  double lo = 2.0;
  double hi = 0.0;
  for (int i = 0; i < 200'000; ++i) {
    const double j = jitter.Next();
    ASSERT_GE(j, kMinJitter) << i;
    ASSERT_LT(j, kMaxJitter) << i;
    lo = std::min(lo, j);
    hi = std::max(hi, j);
  }
  // And covers it.
  EXPECT_LT(lo, 0.667);
  EXPECT_GT(hi, 1.332);
}

TEST(SeededJitterTest, DeterministicPerSeed) {
  SeededJitter a(7);
  SeededJitter b(7);
  SeededJitter c(8);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.Next();
    EXPECT_EQ(x, b.Next()) << i;
    if (x != c.Next()) ++differ;
  }
  EXPECT_GT(differ, 990);
}

TEST(SeededJitterTest, NotConstant) {
  SeededJitter jitter(1);
  const double first = jitter.Next();
  bool changed = false;
  for (int i = 0; i < 10 && !changed; ++i) changed = jitter.Next() != first;
  EXPECT_TRUE(changed);
}

TEST(FixedJitterTest, AlwaysTheGivenFactor) {
  FixedJitter jitter(1.25);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(jitter.Next(), 1.25);
}

}  // namespace
}  // namespace msgq
