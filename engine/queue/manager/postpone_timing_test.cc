#include "engine/queue/manager/postpone_timing.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(PostponeTimingTest, AGraceHoldsPostponesBackThatLong) {
  PostponeTiming timing(absl::Milliseconds(200), /*binlog_row_images=*/true);
  timing.Took(kStart - absl::Seconds(1));  // no effect with a grace
  EXPECT_EQ(timing.Cutoff(kStart, false), kStart - absl::Milliseconds(200));
  EXPECT_EQ(timing.DueAt(kStart, false), kStart + absl::Milliseconds(200));
  // Stopping or not the owner: every postpone now.
  EXPECT_EQ(timing.Cutoff(kStart, true), absl::InfiniteFuture());
  EXPECT_EQ(timing.DueAt(kStart, true), absl::InfinitePast());
}

TEST(PostponeTimingTest, RowImagesWaitForThePreviousRoundsStart) {
  PostponeTiming timing(absl::ZeroDuration(), /*binlog_row_images=*/true);
  EXPECT_EQ(timing.Cutoff(kStart, false), absl::InfinitePast());  // none yet
  timing.Took(kStart);
  EXPECT_EQ(timing.Cutoff(kStart + absl::Milliseconds(3), false), kStart);
  timing.Took(kStart + absl::Milliseconds(3));
  EXPECT_EQ(timing.Cutoff(kStart + absl::Milliseconds(9), false),
            kStart + absl::Milliseconds(3));
  EXPECT_EQ(timing.Cutoff(kStart + absl::Milliseconds(9), true),
            absl::InfiniteFuture());
  EXPECT_EQ(timing.DueAt(kStart, false), absl::InfinitePast());
}

TEST(PostponeTimingTest, OtherwiseEveryPostponeInTheNextRound) {
  PostponeTiming timing(absl::ZeroDuration(), /*binlog_row_images=*/false);
  timing.Took(kStart);
  EXPECT_EQ(timing.Cutoff(kStart + absl::Seconds(1), false),
            absl::InfiniteFuture());
  EXPECT_EQ(timing.DueAt(kStart, false), absl::InfinitePast());
}

}  // namespace
}  // namespace msgq
