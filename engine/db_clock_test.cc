// DbClock: MySQL's time carried on the monotonic clock; steps of the host's
// wall clock change nothing, a step of MySQL's is taken at once, a
// measurement consistent with the estimate changes nothing, and the
// estimate is never ahead of MySQL's clock. Readings on request: the
// latest measurement, and the waiters a measurement answers.
#include "engine/db_clock.h"

#include <vector>

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
  // MySQL may have read its clock as late as the answer's arrival.
  EXPECT_EQ(clock.Now(), db);
  base.Advance(absl::Seconds(3));
  EXPECT_EQ(clock.Now(), db + absl::Seconds(3));
  // The host's wall clock steps either way: nothing changes.
  base.Set(kStart - absl::Seconds(20));
  EXPECT_EQ(clock.Now(), db + absl::Seconds(3));
  base.Set(kStart + absl::Seconds(60));
  EXPECT_EQ(clock.Now(), db + absl::Seconds(3));
  EXPECT_EQ(clock.MonotonicNow(), base.MonotonicNow());
}

TEST(DbClockTest, ConsistentMeasurementsChangeNothingOthersAreTaken) {
  FakeClock base(kStart);
  DbClock clock(&base);
  const absl::Time mono = base.MonotonicNow();
  clock.Observe(kStart, mono, mono);
  EXPECT_EQ(clock.Now(), kStart);
  // MySQL read kStart - 3 ms somewhere in a 10 ms round trip: the estimate
  // fits (MySQL may have read it 3 ms before the answer came).
  clock.Observe(kStart - absl::Milliseconds(3), mono - absl::Milliseconds(10),
                mono);
  EXPECT_EQ(clock.Now(), kStart);
  // kStart + 1 ms read before `mono`: the estimate is at least 1 ms behind.
  clock.Observe(kStart + absl::Milliseconds(1), mono - absl::Microseconds(500),
                mono);
  EXPECT_EQ(clock.Now(), kStart + absl::Milliseconds(1));
  // kStart read after mono - 0.5 ms: the estimate is at least 0.5 ms
  // ahead, which would send rows early; taken at once.
  clock.Observe(kStart, mono - absl::Microseconds(500), mono);
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

// A MySQL whose clock is `skew` ahead of the monotonic one answers queries
// of round trips up to 20 ms, reading its clock at the end, the start or
// the middle of each (the first at the end of an 8 ms round trip): at no
// moment is the estimate ahead of it. A query without a round trip then
// makes it exact.
TEST(DbClockTest, NeverAheadOfMySql) {
  FakeClock base(kStart);
  DbClock clock(&base);
  const absl::Duration skew = absl::Seconds(7) + absl::Microseconds(123);
  auto mysql_now = [&] { return base.MonotonicNow() + skew; };
  auto query = [&](absl::Duration rtt, int at /* 0 start, 1 middle, 2 end */) {
    const absl::Time sent = base.MonotonicNow();
    base.Advance(rtt * at / 2);
    const absl::Time read = mysql_now();
    base.Advance(rtt - rtt * at / 2);
    clock.Observe(read, sent, base.MonotonicNow());
  };
  for (int i = 1; i <= 300; ++i) {
    query(absl::Microseconds((i * 7919) % 20000), (i + 1) % 3);
    ASSERT_LE(clock.Now(), mysql_now()) << "measurement " << i;
    base.Advance(absl::Milliseconds(3));
    ASSERT_LE(clock.Now(), mysql_now()) << "after measurement " << i;
  }
  query(absl::ZeroDuration(), 0);
  EXPECT_EQ(clock.Now(), mysql_now());
}

// Last() is the latest measurement as MySQL answered it, whether or not
// it moved the estimate, and also when MySQL's clock went back.
TEST(DbClockTest, LastIsTheLatestMeasurement) {
  FakeClock base(kStart);
  DbClock clock(&base);
  EXPECT_EQ(clock.Last(), std::nullopt);
  const absl::Time mono = base.MonotonicNow();
  clock.Observe(kStart + absl::Seconds(1), mono - absl::Milliseconds(2), mono);
  ASSERT_TRUE(clock.Last().has_value());
  EXPECT_EQ(clock.Last()->db_ns, absl::ToUnixNanos(kStart) + kSecond);
  EXPECT_EQ(clock.Last()->sent, mono - absl::Milliseconds(2));
  // Consistent with the estimate: the estimate stays, the reading is new.
  base.Advance(absl::Seconds(1));
  clock.Observe(kStart + absl::Seconds(2) - absl::Milliseconds(1),
                base.MonotonicNow() - absl::Milliseconds(3),
                base.MonotonicNow());
  EXPECT_EQ(clock.Now(), kStart + absl::Seconds(2));
  EXPECT_EQ(clock.Last()->db_ns,
            absl::ToUnixNanos(kStart) + 2 * kSecond - 1'000'000);
  EXPECT_EQ(clock.Last()->sent, base.MonotonicNow() - absl::Milliseconds(3));
  // MySQL's clock stepped 30 s back: the latest reading, not the largest.
  clock.Observe(kStart - absl::Seconds(28), base.MonotonicNow(),
                base.MonotonicNow());
  EXPECT_EQ(clock.Last()->db_ns, absl::ToUnixNanos(kStart) - 28 * kSecond);
  EXPECT_EQ(clock.Now(), kStart - absl::Seconds(28));
}

class CountingWaiter final : public DbReadings::Waiter {
 public:
  void ReadingTaken() override { ++taken; }
  int taken = 0;
};

// A request wakes the measuring thread at once, and is answered by the
// first successful measurement that started after it: one wake per
// request however many were made, none after Cancel, none by a failed
// measurement (the next one answers it, at the usual pace).
TEST(DbClockTest, RequestsAreAnsweredByAMeasurementStartedAfterThem) {
  FakeClock base(kStart);
  DbClock clock(&base);
  CountingWaiter a, b, c;
  // Nothing requested: the wait lasts until its deadline (passed here).
  EXPECT_TRUE(clock.WaitForMeasure(base.MonotonicNow()));
  clock.Request(&a);
  clock.Request(&a);
  // Requested: no wait, whatever the deadline.
  EXPECT_TRUE(clock.WaitForMeasure(absl::InfiniteFuture()));
  clock.MeasureStarts();
  clock.Request(&b);  // after the query left: not answered by it
  clock.Observe(kStart, base.MonotonicNow(), base.MonotonicNow());
  clock.MeasureEnds(true);
  EXPECT_EQ(a.taken, 1);
  EXPECT_EQ(b.taken, 0);
  // b's request wakes the thread again; that measurement fails.
  EXPECT_TRUE(clock.WaitForMeasure(absl::InfiniteFuture()));
  clock.MeasureStarts();
  clock.MeasureEnds(false);
  EXPECT_EQ(b.taken, 0);
  // The next measurement, at the usual pace, answers it.
  EXPECT_TRUE(clock.WaitForMeasure(base.MonotonicNow()));
  clock.Request(&c);
  clock.Cancel(&c);
  clock.MeasureStarts();
  clock.Observe(kStart, base.MonotonicNow(), base.MonotonicNow());
  clock.MeasureEnds(true);
  EXPECT_EQ(a.taken, 1);
  EXPECT_EQ(b.taken, 1);
  EXPECT_EQ(c.taken, 0);
  clock.Close();
  EXPECT_FALSE(clock.WaitForMeasure(absl::InfiniteFuture()));
}

}  // namespace
}  // namespace msgq
