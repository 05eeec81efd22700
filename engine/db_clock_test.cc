// DbClock: MySQL's time carried on the monotonic clock; steps of the host's
// wall clock change nothing, a step of MySQL's is taken at once, jitter
// within the round trip is not.
#include "engine/db_clock.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(DbClockTest, BaseWallClockUntilTheFirstMeasurement) {
  FakeClock base(kStart);
  DbClock clock(&base);
  EXPECT_EQ(clock.Now(), kStart);
  EXPECT_EQ(clock.offset(), std::nullopt);
  base.Set(kStart - absl::Seconds(20));
  EXPECT_EQ(clock.Now(), kStart - absl::Seconds(20));
}

TEST(DbClockTest, MySqlTimeCarriedOnTheMonotonicClock) {
  FakeClock base(kStart);
  DbClock clock(&base);
  const absl::Time mono = base.MonotonicNow();
  const absl::Time db = kStart + absl::Seconds(5);  // MySQL 5 s ahead
  clock.Observe(db, mono - absl::Milliseconds(2), mono);
  // The answer was given half way through the round trip.
  EXPECT_EQ(clock.Now(), db + absl::Milliseconds(1));
  base.Advance(absl::Seconds(3));
  EXPECT_EQ(clock.Now(), db + absl::Seconds(3) + absl::Milliseconds(1));
  // The host's wall clock steps either way: nothing changes.
  base.Set(kStart - absl::Seconds(20));
  EXPECT_EQ(clock.Now(), db + absl::Seconds(3) + absl::Milliseconds(1));
  base.Set(kStart + absl::Seconds(60));
  EXPECT_EQ(clock.Now(), db + absl::Seconds(3) + absl::Milliseconds(1));
  EXPECT_EQ(clock.MonotonicNow(), base.MonotonicNow());
}

TEST(DbClockTest, JitterIsIgnoredAndStepsAreTaken) {
  FakeClock base(kStart);
  DbClock clock(&base);
  const absl::Time mono = base.MonotonicNow();
  clock.Observe(kStart, mono, mono);
  EXPECT_EQ(clock.Now(), kStart);
  // 2 ms off the estimate with a 1 ms round trip: within the 2 ms floor.
  clock.Observe(kStart + absl::Microseconds(1500), mono - absl::Milliseconds(1),
                mono);
  EXPECT_EQ(clock.Now(), kStart);
  // 8 ms off with a 10 ms round trip: within the round trip.
  clock.Observe(kStart + absl::Milliseconds(3), mono - absl::Milliseconds(10),
                mono);
  EXPECT_EQ(clock.Now(), kStart);
  // MySQL's clock stepped forward 20 s.
  clock.Observe(kStart + absl::Seconds(20), mono, mono);
  EXPECT_EQ(clock.Now(), kStart + absl::Seconds(20));
  EXPECT_EQ(clock.offset(), kStart + absl::Seconds(20) - mono);
  // And back.
  clock.Observe(kStart - absl::Seconds(20), mono, mono);
  EXPECT_EQ(clock.Now(), kStart - absl::Seconds(20));
  // A reversed pair of readings counts as no round trip.
  clock.Observe(kStart, mono, mono - absl::Seconds(1));
  EXPECT_EQ(clock.Now(), kStart);
}

}  // namespace
}  // namespace msgq
