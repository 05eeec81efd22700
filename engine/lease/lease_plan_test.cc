#include "engine/lease/lease_plan.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/lease/lease_retry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAreArray;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kNow = int64_t{1'700'000'000} * kSec;  // MySQL's clock
constexpr absl::Duration kLease = absl::Seconds(5);
constexpr absl::Duration kGrace = absl::Seconds(10);
const absl::Time kStart = absl::FromUnixSeconds(1'000'000);  // monotonic

std::vector<std::string> Tables(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("db.t", i));
  return out;
}

LeaseRow Live(const std::string& table, const std::string& owner) {
  return LeaseRow{table, owner, kNow - 60 * kSec, kNow + 5 * kSec};
}

// Heartbeat rows of `instances`, at version `beat`.
std::vector<InstanceRow> Beats(const std::vector<std::string>& instances,
                               int64_t beat = 1) {
  std::vector<InstanceRow> out;
  for (const std::string& i : instances) out.push_back({i, beat});
  return out;
}

// What `self` concludes from one read of `view`.
LeaseWatch WatchOf(const std::string& self, const LeaseView& view) {
  LeaseWatch watch(self, kLease);
  watch.Observe(view, kStart);
  return watch;
}

TEST(LeasePlanTest, AloneTakesEveryNewTable) {
  const LeasePlan plan =
      PlanLeases(Tables(12), WatchOf("a", {kNow, Beats({"a"}), {}}), kGrace);
  EXPECT_EQ(plan.share, 12);
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray(Tables(12)));
  EXPECT_THAT(plan.keep, IsEmpty());
  EXPECT_THAT(plan.release, IsEmpty());
}

TEST(LeasePlanTest, KeepsLiveLeasesAndLeavesOthersAlone) {
  const LeaseView view{
      kNow, Beats({"a", "b"}), {Live("db.t0", "a"), Live("db.t1", "b")}};
  const LeasePlan plan =
      PlanLeases({"db.t0", "db.t1"}, WatchOf("a", view), kGrace);
  EXPECT_EQ(plan.share, 1);
  EXPECT_THAT(plan.keep, UnorderedElementsAreArray({"db.t0"}));
  EXPECT_THAT(plan.acquire, IsEmpty());
  EXPECT_THAT(plan.release, IsEmpty());
}

// b stopped renewing (its heartbeat too): once a has read b's lease
// unchanged for a lease, b counts as gone and its table is a's to take.
TEST(LeasePlanTest, LapsedLeaseOfAnotherIsTakenWithinShare) {
  LeaseWatch watch("a", kLease);
  LeaseView view{
      kNow, Beats({"a", "b"}), {Live("db.t0", "a"), Live("db.t1", "b")}};
  watch.Observe(view, kStart);
  view.leases[0].expires += kSec;  // a renews; b does not
  view.instances[0].expires = 2;
  watch.Observe(view, kStart + kLease - absl::Nanoseconds(1));
  LeasePlan plan = PlanLeases({"db.t0", "db.t1"}, watch, kGrace);
  EXPECT_EQ(plan.share, 1);
  EXPECT_THAT(plan.keep, UnorderedElementsAreArray({"db.t0"}));
  EXPECT_THAT(plan.acquire, IsEmpty());
  watch.Observe(view, kStart + kLease);
  plan = PlanLeases({"db.t0", "db.t1"}, watch, kGrace);
  EXPECT_EQ(plan.share, 2);
  EXPECT_THAT(plan.keep, UnorderedElementsAreArray({"db.t0"}));
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t1"}));
}

// No expiry is compared with MySQL's clock: a's own lease, expired an hour
// ago by it, is kept (a renewal renews it whatever it says).
TEST(LeasePlanTest, OwnLeaseIsKeptWhateverItsExpiry) {
  LeaseRow mine = Live("db.t0", "a");
  mine.expires = kNow - 3600 * kSec;
  const LeasePlan plan =
      PlanLeases({"db.t0"}, WatchOf("a", {kNow, Beats({"a"}), {mine}}), kGrace);
  EXPECT_THAT(plan.keep, UnorderedElementsAreArray({"db.t0"}));
  EXPECT_THAT(plan.acquire, IsEmpty());
}

TEST(LeasePlanTest, JoinerMakesOwnerReleaseDownToItsShare) {
  LeaseView view{kNow, Beats({"a", "b", "c"}), {}};
  for (const std::string& t : Tables(12)) view.leases.push_back(Live(t, "a"));
  // b and c hold nothing: room for 8, a keeps its 4 preferred.
  const LeasePlan a = PlanLeases(Tables(12), WatchOf("a", view), kGrace);
  EXPECT_EQ(a.share, 4);
  EXPECT_THAT(a.keep, SizeIs(4));
  EXPECT_THAT(a.release, SizeIs(8));
  EXPECT_THAT(a.acquire, IsEmpty());
  // b, planning on the same view, takes nothing yet (all held).
  const LeasePlan b = PlanLeases(Tables(12), WatchOf("b", view), kGrace);
  EXPECT_THAT(b.acquire, IsEmpty());
  EXPECT_THAT(b.keep, IsEmpty());
}

TEST(LeasePlanTest, NeverReleasesWhatNobodyHasRoomFor) {
  // c counts as alive but already holds its share: a keeps its extra one.
  LeaseView view{kNow, Beats({"a", "c"}), {}};
  const std::vector<std::string> tables = Tables(3);
  view.leases = {Live("db.t0", "a"), Live("db.t1", "a"), Live("db.t2", "c")};
  LeasePlan plan = PlanLeases(tables, WatchOf("a", view), kGrace);
  EXPECT_EQ(plan.share, 2);
  EXPECT_THAT(plan.keep, SizeIs(2));
  EXPECT_THAT(plan.release, IsEmpty());
  // With a third live instance holding nothing, share drops to 1 and a
  // hands one over (the room is 1 for b; c is at its share).
  view.instances = Beats({"a", "b", "c"});
  plan = PlanLeases(tables, WatchOf("a", view), kGrace);
  EXPECT_EQ(plan.share, 1);
  EXPECT_THAT(plan.keep, SizeIs(1));
  EXPECT_THAT(plan.release, SizeIs(1));
}

TEST(LeasePlanTest, LongFreeTableIsTakenEvenAtShare) {
  // Four tables, two instances: share 2. a holds its share; db.t3 was
  // released (version 7).
  LeaseView view{kNow,
                 Beats({"a", "b"}),
                 {Live("db.t0", "a"), Live("db.t1", "a"), Live("db.t2", "b"),
                  LeaseRow{"db.t3", "", 0, 7}}};
  LeaseWatch a("a", kLease), b("b", kLease);
  a.Observe(view, kStart);
  b.Observe(view, kStart);
  // Free for 1 s: left to b, which is under its share.
  for (auto& row : view.leases) {
    if (!row.owner.empty()) row.expires += kSec;
  }
  view.instances = Beats({"a", "b"}, 2);
  a.Observe(view, kStart + absl::Seconds(1));
  b.Observe(view, kStart + absl::Seconds(1));
  LeasePlan plan = PlanLeases(Tables(4), a, kGrace);
  EXPECT_EQ(plan.share, 2);
  EXPECT_THAT(plan.keep, SizeIs(2));
  EXPECT_THAT(plan.acquire, IsEmpty());
  EXPECT_THAT(PlanLeases(Tables(4), b, kGrace).acquire,
              UnorderedElementsAreArray({"db.t3"}));
  // Free for 11 s > grace and nobody took it: a does, even at its share.
  for (auto& row : view.leases) {
    if (!row.owner.empty()) row.expires += kSec;
  }
  view.instances = Beats({"a", "b"}, 3);
  a.Observe(view, kStart + absl::Seconds(11));
  plan = PlanLeases(Tables(4), a, kGrace);
  EXPECT_THAT(plan.keep, SizeIs(2));
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t3"}));
}

TEST(LeasePlanTest, IgnoresLeasesOfTablesNotServed) {
  const LeasePlan plan = PlanLeases(
      {"db.t0"}, WatchOf("a", {kNow, Beats({"a"}), {Live("db.gone", "a")}}),
      kGrace);
  EXPECT_THAT(plan.keep, IsEmpty());
  EXPECT_THAT(plan.release, IsEmpty());
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t0"}));
}

// Three instances that plan in turn, every 250 ms of one monotonic clock,
// on the rows the others left (each take a compare-and-swap on the
// version its watch read) converge to 4/4/4 for 12 tables; one dying
// (renewing nothing more) gives 6/6 once its leases lapsed; it coming back
// gives 4/4/4 again; every table has exactly one owner throughout.
TEST(LeasePlanTest, SimulatedInstancesSpreadAndRebalance) {
  const std::vector<std::string> tables = Tables(12);
  std::map<std::string, LeaseRow> rows;  // table -> row
  std::map<std::string, InstanceRow> beats;
  std::map<std::string, LeaseWatch> watches;
  absl::Time mono = kStart;
  int64_t version = 0;
  auto step = [&](const std::vector<std::string>& alive) {
    for (const std::string& self : alive) {
      // Its renewal: its heartbeat and its leases get a new version.
      beats[self] = InstanceRow{self, ++version};
      for (auto& [t, row] : rows) {
        if (row.owner == self) row.expires = ++version;
      }
      LeaseView view{kNow, {}, {}};
      for (const auto& [i, beat] : beats) view.instances.push_back(beat);
      for (const auto& [t, row] : rows) view.leases.push_back(row);
      LeaseWatch& watch = watches.try_emplace(self, self, kLease).first->second;
      watch.Observe(view, mono);
      const LeasePlan plan = PlanLeases(tables, watch, kGrace);
      for (const std::string& t : plan.release) {
        rows[t].owner = "";
        rows[t].expires = ++version;
      }
      for (const std::string& t : plan.acquire) {
        const TableLease seen = watch.Table(t);
        LeaseRow& row =
            rows.try_emplace(t, LeaseRow{t, "", 0, 0}).first->second;
        if (row.owner == seen.owner && row.expires == seen.version) {
          row.owner = self;
          row.expires = ++version;
        }
      }
      mono += absl::Milliseconds(250);
    }
  };
  auto counts = [&] {
    std::map<std::string, int> c;
    for (const auto& [t, row] : rows) {
      if (!row.owner.empty()) ++c[row.owner];
    }
    return c;
  };
  step({"a"});
  EXPECT_EQ(counts(), (std::map<std::string, int>{{"a", 12}}));
  for (int i = 0; i < 4; ++i) step({"a", "b", "c"});
  EXPECT_EQ(counts(),
            (std::map<std::string, int>{{"a", 4}, {"b", 4}, {"c", 4}}));
  // c dies: nothing of its changes any more. 5 s later its leases lapse.
  for (int i = 0; i < 9; ++i) step({"a", "b"});
  EXPECT_EQ(counts(),
            (std::map<std::string, int>{{"a", 4}, {"b", 4}, {"c", 4}}));
  for (int i = 0; i < 2; ++i) step({"a", "b"});
  EXPECT_EQ(counts(), (std::map<std::string, int>{{"a", 6}, {"b", 6}}));
  // c restarts (a new process: a new watch).
  watches.erase("c");
  for (int i = 0; i < 4; ++i) step({"a", "b", "c"});
  EXPECT_EQ(counts(),
            (std::map<std::string, int>{{"a", 4}, {"b", 4}, {"c", 4}}));
  EXPECT_EQ(rows.size(), 12u);
}

// lease_retry.h: a statement MySQL aborts (a Galera certification failure,
// 1213, or a lock wait timeout, 1205) runs again at once, twice at most.
struct Script {
  std::vector<absl::Status> answers;  // one per run; then OK
  int runs = 0;
  absl::StatusOr<int> operator()() {
    const int run = runs++;
    if (run < static_cast<int>(answers.size()) && !answers[run].ok()) {
      return answers[run];
    }
    return run;
  }
};

TEST(LeaseRetryTest, AnAbortedStatementRunsAgainAtOnce) {
  Script script{{absl::AbortedError("1213"), absl::AbortedError("1205")}};
  absl::StatusOr<int> r = RetryAborted([&] { return script(); });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 2);  // the third run's answer
  EXPECT_EQ(script.runs, 3);
}

TEST(LeaseRetryTest, StillAbortedAfterTwoRetriesIsReturned) {
  Script script{{absl::AbortedError("a"), absl::AbortedError("b"),
                 absl::AbortedError("c"), absl::AbortedError("d")}};
  absl::StatusOr<int> r = RetryAborted([&] { return script(); });
  EXPECT_EQ(r.status(), absl::AbortedError("c"));
  EXPECT_EQ(script.runs, 1 + kAbortedRetries);
  EXPECT_EQ(kAbortedRetries, 2);
}

TEST(LeaseRetryTest, OtherErrorsAndSuccessRunOnce) {
  for (const absl::Status& first :
       {absl::OkStatus(), absl::UnavailableError("gone"),
        absl::PermissionDeniedError("denied"), absl::InternalError("bad")}) {
    Script script{{first}};
    absl::StatusOr<int> r = RetryAborted([&] { return script(); });
    EXPECT_EQ(script.runs, 1) << first;
    if (first.ok()) {
      EXPECT_EQ(*r, 0);
    } else {
      EXPECT_EQ(r.status(), first);
    }
  }
}

TEST(LeaseRetryTest, OnlyAnAbortedRenewalIsALostRace) {
  EXPECT_TRUE(RenewLostRace(absl::AbortedError("1213")));
  EXPECT_FALSE(RenewLostRace(absl::UnavailableError("gone")));
  EXPECT_FALSE(RenewLostRace(absl::PermissionDeniedError("denied")));
  EXPECT_FALSE(RenewLostRace(absl::OkStatus()));
}

}  // namespace
}  // namespace msgq
