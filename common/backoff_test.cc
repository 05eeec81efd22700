#include "common/backoff.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(BackoffTest, GrowsExponentiallyToTheCapWithoutJitter) {
  Backoff backoff({.initial = absl::Milliseconds(100),
                   .multiplier = 2,
                   .max = absl::Seconds(1),
                   .jitter = 0},
                  1);
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(100));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(200));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(400));
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(800));
  EXPECT_EQ(backoff.Next(), absl::Seconds(1));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(backoff.Next(), absl::Seconds(1));
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff backoff({.jitter = 0}, 1);
  backoff.Next();
  backoff.Next();
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(100));
}

TEST(BackoffTest, JitterStaysWithinBoundsAndNeverPassesTheCap) {
  Backoff backoff(BackoffOptions{}, 7);  // 100ms x2, cap 5s, +-20%
  double nominal = 0.1;
  bool saw_below = false, saw_above = false;
  for (int i = 0; i < 200; ++i) {
    const double d = absl::ToDoubleSeconds(backoff.Next());
    EXPECT_GE(d, nominal * 0.8 - 1e-9) << "attempt " << i;
    EXPECT_LE(d, std::min(5.0, nominal * 1.2) + 1e-9) << "attempt " << i;
    if (nominal == 5.0) {
      saw_below |= d < 5.0;
    } else {
      saw_above |= d > nominal;
    }
    nominal = std::min(5.0, nominal * 2);
  }
  EXPECT_TRUE(saw_below);
  EXPECT_TRUE(saw_above);
}

TEST(BackoffTest, SameSeedSameSequence) {
  Backoff a(BackoffOptions{}, 42), b(BackoffOptions{}, 42),
      c(BackoffOptions{}, 43);
  bool differs = false;
  for (int i = 0; i < 10; ++i) {
    const absl::Duration da = a.Next();
    EXPECT_EQ(da, b.Next());
    differs |= da != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(BackoffTest, SanitizesOptions) {
  Backoff backoff({.initial = absl::Milliseconds(10),
                   .multiplier = 0.5,             // treated as 1
                   .max = absl::Milliseconds(1),  // raised to initial
                   .jitter = 5},                  // clamped to 1
                  3);
  for (int i = 0; i < 50; ++i) {
    const absl::Duration d = backoff.Next();
    EXPECT_GE(d, absl::ZeroDuration());
    EXPECT_LE(d, absl::Milliseconds(10));
  }
}

}  // namespace
}  // namespace msgq
