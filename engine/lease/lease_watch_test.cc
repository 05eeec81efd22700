#include "engine/lease/lease_watch.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/lease/lease_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using State = TableLease::State;

constexpr absl::Duration kLease = absl::Seconds(5);
constexpr absl::Duration kGrace = absl::Seconds(10);
constexpr int64_t kSec = 1'000'000'000;
// MySQL's clock at the start, Unix ns.
constexpr int64_t kMysqlNow = int64_t{1'700'000'000} * kSec;

// Every test reads views at the fake clock's monotonic time; its wall
// clock is never read by the watch.
class LeaseWatchTest : public ::testing::Test {
 protected:
  LeaseWatchTest() : clock_(absl::FromUnixSeconds(1'000'000)) {}

  void Observe(const LeaseView& view) {
    watch_.Observe(view, clock_.MonotonicNow());
  }
  // a and b renew their heartbeats; b holds db.t0 at `version`, and
  // MySQL's clock reads `mysql_now`.
  LeaseView HeldByB(int64_t version, int64_t mysql_now) {
    ++beats_;
    return LeaseView{mysql_now,
                     {{"a", beats_}, {"b", beats_}},
                     {{"db.t0", "b", kMysqlNow - 60 * kSec, version}}};
  }
  std::vector<std::string> Acquire() {
    return PlanLeases({"db.t0"}, watch_, kGrace).acquire;
  }

  FakeClock clock_;
  LeaseWatch watch_{"a", kLease};
  int64_t beats_ = 0;
};

// MySQL's clock steps 20 s forward: b's expiry is in the past at once, but
// b's version has not changed for less than a lease of a's clock, so a
// does not take it until it has read the same version for 5 s.
TEST_F(LeaseWatchTest, ExpiryInThePastIsNotTakenBeforeAWholeLeaseUnchanged) {
  const int64_t expires = kMysqlNow + 5 * kSec;
  Observe(HeldByB(expires, kMysqlNow));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kHeld);
  clock_.Advance(absl::Seconds(1));
  Observe(HeldByB(expires, kMysqlNow + 21 * kSec));  // the step
  for (int i = 2; i <= 4; ++i) {
    clock_.Advance(absl::Seconds(1));
    Observe(HeldByB(expires, kMysqlNow + (20 + i) * kSec));
  }
  clock_.Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  Observe(HeldByB(expires, kMysqlNow + 25 * kSec));
  TableLease lease = watch_.Table("db.t0");
  EXPECT_EQ(lease.state, State::kHeld);
  EXPECT_EQ(lease.free_for, absl::ZeroDuration());
  EXPECT_THAT(Acquire(), IsEmpty());

  clock_.Advance(absl::Nanoseconds(1));  // 5 s since the first read
  Observe(HeldByB(expires, kMysqlNow + 25 * kSec));
  lease = watch_.Table("db.t0");
  EXPECT_EQ(lease.state, State::kLapsed);
  EXPECT_EQ(lease.owner, "b");
  EXPECT_EQ(lease.version, expires);  // what the take's UPDATE names
  EXPECT_EQ(lease.free_for, absl::ZeroDuration());
  EXPECT_THAT(Acquire(), ElementsAre("db.t0"));
  clock_.Advance(absl::Milliseconds(5'500));
  Observe(HeldByB(expires, kMysqlNow + 31 * kSec));
  EXPECT_EQ(watch_.Table("db.t0").free_for, absl::Milliseconds(5'500));
}

// A renewal (a new version) restarts the wait from the read that saw it.
TEST_F(LeaseWatchTest, RenewalRestartsTheWait) {
  Observe(HeldByB(kMysqlNow + 5 * kSec, kMysqlNow));
  clock_.Advance(absl::Seconds(4));
  Observe(HeldByB(kMysqlNow + 9 * kSec, kMysqlNow + 4 * kSec));
  clock_.Advance(absl::Seconds(1));
  Observe(HeldByB(kMysqlNow + 9 * kSec, kMysqlNow + 5 * kSec));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kHeld);
  EXPECT_THAT(Acquire(), IsEmpty());
  clock_.Advance(absl::Seconds(4) - absl::Nanoseconds(1));
  Observe(HeldByB(kMysqlNow + 9 * kSec, kMysqlNow + 9 * kSec));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kHeld);
  clock_.Advance(absl::Nanoseconds(1));
  Observe(HeldByB(kMysqlNow + 9 * kSec, kMysqlNow + 9 * kSec));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kLapsed);
  EXPECT_EQ(watch_.Table("db.t0").version, kMysqlNow + 9 * kSec);
  EXPECT_THAT(Acquire(), ElementsAre("db.t0"));
}

// After a step back of MySQL's clock a renewal writes expires + 1 (the
// GREATEST), and an older msgqd would write a lower now + lease: any other
// version, higher or lower, is a change.
TEST_F(LeaseWatchTest, AnyOtherVersionIsAChange) {
  Observe(HeldByB(kMysqlNow + 5 * kSec, kMysqlNow));
  clock_.Advance(absl::Seconds(4));
  Observe(HeldByB(kMysqlNow + 5 * kSec + 1, kMysqlNow - 16 * kSec));
  clock_.Advance(absl::Seconds(4));
  Observe(HeldByB(kMysqlNow + 1 * kSec, kMysqlNow - 12 * kSec));
  clock_.Advance(absl::Seconds(4));
  Observe(HeldByB(kMysqlNow + 1 * kSec, kMysqlNow - 8 * kSec));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kHeld);
  clock_.Advance(absl::Seconds(1));
  Observe(HeldByB(kMysqlNow + 1 * kSec, kMysqlNow - 7 * kSec));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kLapsed);
}

// A released lease is taken at the first read that shows it; it has been
// free only since then as far as this instance knows.
TEST_F(LeaseWatchTest, ReleasedLeaseIsTakenAtOnce) {
  const LeaseView released{
      kMysqlNow, {{"a", 1}, {"b", 1}}, {{"db.t0", "", 0, kMysqlNow + 7}}};
  Observe(released);
  TableLease lease = watch_.Table("db.t0");
  EXPECT_EQ(lease.state, State::kFree);
  EXPECT_EQ(lease.owner, "");
  EXPECT_EQ(lease.version, kMysqlNow + 7);
  EXPECT_TRUE(lease.row);
  EXPECT_EQ(lease.free_for, absl::ZeroDuration());
  EXPECT_THAT(Acquire(), ElementsAre("db.t0"));
  clock_.Advance(absl::Seconds(3));
  Observe(released);
  EXPECT_EQ(watch_.Table("db.t0").free_for, absl::Seconds(3));
}

TEST_F(LeaseWatchTest, NoRowOrARowNeverHeldIsFreeForever) {
  EXPECT_EQ(watch_.Table("db.t0").free_for, absl::InfiniteDuration());
  Observe(LeaseView{kMysqlNow, {}, {{"db.t1", "", 0, 0}}});
  const TableLease none = watch_.Table("db.t0");
  EXPECT_EQ(none.state, State::kFree);
  EXPECT_FALSE(none.row);
  EXPECT_EQ(none.free_for, absl::InfiniteDuration());
  const TableLease never = watch_.Table("db.t1");
  EXPECT_EQ(never.state, State::kFree);
  EXPECT_TRUE(never.row);
  EXPECT_EQ(never.version, 0);
  EXPECT_EQ(never.free_for, absl::InfiniteDuration());
}

// A row under this instance's id is its own whatever its expiry says (a
// restart with the same id resumes it at once).
TEST_F(LeaseWatchTest, OwnRowIsMineWhateverItsExpiry) {
  Observe(
      LeaseView{kMysqlNow, {}, {{"db.t0", "a", 1, kMysqlNow - 3600 * kSec}}});
  clock_.Advance(absl::Hours(1));
  Observe(
      LeaseView{kMysqlNow, {}, {{"db.t0", "a", 1, kMysqlNow - 3600 * kSec}}});
  EXPECT_EQ(watch_.Table("db.t0").state, State::kMine);
  EXPECT_EQ(watch_.Table("db.t0").free_for, absl::ZeroDuration());
}

// Alive: a heartbeat that changed (or was first read) less than a lease
// ago; a row unchanged for a lease, or gone, is not.
TEST_F(LeaseWatchTest, AliveIsAHeartbeatChangedWithinALease) {
  EXPECT_THAT(watch_.Alive(), ElementsAre("a"));
  Observe(LeaseView{kMysqlNow, {{"b", 10}, {"c", 10}, {"d", 10}}, {}});
  EXPECT_THAT(watch_.Alive(), ElementsAre("a", "b", "c", "d"));
  clock_.Advance(absl::Seconds(4));
  Observe(LeaseView{kMysqlNow, {{"b", 11}, {"c", 10}, {"d", 10}}, {}});
  clock_.Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  Observe(LeaseView{kMysqlNow, {{"b", 11}, {"c", 10}}, {}});
  EXPECT_THAT(watch_.Alive(), ElementsAre("a", "b", "c"));
  clock_.Advance(absl::Nanoseconds(1));
  Observe(LeaseView{kMysqlNow, {{"b", 11}, {"c", 10}}, {}});
  EXPECT_THAT(watch_.Alive(), ElementsAre("a", "b"));
  // A row that comes back is new.
  Observe(LeaseView{kMysqlNow, {{"b", 11}, {"c", 10}, {"d", 10}}, {}});
  EXPECT_THAT(watch_.Alive(), ElementsAre("a", "b", "d"));
}

// A row gone from a view and back is read afresh: its wait starts again.
TEST_F(LeaseWatchTest, RowGoneAndBackStartsAgain) {
  Observe(HeldByB(kMysqlNow + 5 * kSec, kMysqlNow));
  clock_.Advance(absl::Seconds(4));
  Observe(LeaseView{kMysqlNow, {{"b", 99}}, {}});
  clock_.Advance(absl::Seconds(1));
  Observe(HeldByB(kMysqlNow + 5 * kSec, kMysqlNow));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kHeld);
  clock_.Advance(absl::Seconds(5));
  Observe(HeldByB(kMysqlNow + 5 * kSec, kMysqlNow));
  EXPECT_EQ(watch_.Table("db.t0").state, State::kLapsed);
}

}  // namespace
}  // namespace msgq
