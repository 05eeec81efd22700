#include "engine/lease/lease_plan.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/lease/lease_retry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAreArray;

constexpr int64_t kNow = int64_t{1'700'000'000} * 1'000'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kGrace = 10 * kSec;

std::vector<std::string> Tables(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("db.t", i));
  return out;
}

LeaseRow Live(const std::string& table, const std::string& owner) {
  return LeaseRow{table, owner, kNow - 60 * kSec, kNow + 5 * kSec};
}

TEST(LeasePlanTest, AloneTakesEveryNewTable) {
  LeaseView view{kNow, {"a"}, {}};
  const LeasePlan plan = PlanLeases("a", Tables(12), view, kGrace);
  EXPECT_EQ(plan.share, 12);
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray(Tables(12)));
  EXPECT_THAT(plan.keep, IsEmpty());
  EXPECT_THAT(plan.release, IsEmpty());
}

TEST(LeasePlanTest, KeepsLiveLeasesAndLeavesOthersAlone) {
  LeaseView view{kNow, {"a", "b"}, {Live("db.t0", "a"), Live("db.t1", "b")}};
  const LeasePlan plan = PlanLeases("a", {"db.t0", "db.t1"}, view, kGrace);
  EXPECT_EQ(plan.share, 1);
  EXPECT_THAT(plan.keep, UnorderedElementsAreArray({"db.t0"}));
  EXPECT_THAT(plan.acquire, IsEmpty());
  EXPECT_THAT(plan.release, IsEmpty());
}

TEST(LeasePlanTest, ExpiredLeaseOfAnotherIsTakenWithinShare) {
  LeaseRow dead = Live("db.t1", "b");
  dead.expires = kNow - 1;  // expired just now: free, not yet long free
  LeaseView view{kNow, {"a"}, {Live("db.t0", "a"), dead}};
  const LeasePlan plan = PlanLeases("a", {"db.t0", "db.t1"}, view, kGrace);
  EXPECT_EQ(plan.share, 2);
  EXPECT_THAT(plan.keep, UnorderedElementsAreArray({"db.t0"}));
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t1"}));
}

TEST(LeasePlanTest, OwnExpiredLeaseIsNotKeptButRetaken) {
  LeaseRow mine = Live("db.t0", "a");
  mine.expires = kNow;  // expires == now is expired
  LeaseView view{kNow, {"a"}, {mine}};
  const LeasePlan plan = PlanLeases("a", {"db.t0"}, view, kGrace);
  EXPECT_THAT(plan.keep, IsEmpty());
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t0"}));
}

TEST(LeasePlanTest, JoinerMakesOwnerReleaseDownToItsShare) {
  LeaseView view{kNow, {"a", "b", "c"}, {}};
  for (const std::string& t : Tables(12)) view.leases.push_back(Live(t, "a"));
  // b and c hold nothing: room for 8, a keeps its 4 preferred.
  const LeasePlan a = PlanLeases("a", Tables(12), view, kGrace);
  EXPECT_EQ(a.share, 4);
  EXPECT_THAT(a.keep, SizeIs(4));
  EXPECT_THAT(a.release, SizeIs(8));
  EXPECT_THAT(a.acquire, IsEmpty());
  // b, planning on the same view, takes nothing yet (all live).
  const LeasePlan b = PlanLeases("b", Tables(12), view, kGrace);
  EXPECT_THAT(b.acquire, IsEmpty());
  EXPECT_THAT(b.keep, IsEmpty());
}

TEST(LeasePlanTest, NeverReleasesWhatNobodyHasRoomFor) {
  // c counts as alive but already holds its share: a keeps its extra one.
  LeaseView view{kNow, {"a", "c"}, {}};
  const std::vector<std::string> tables = Tables(3);
  view.leases = {Live("db.t0", "a"), Live("db.t1", "a"), Live("db.t2", "c")};
  LeasePlan plan = PlanLeases("a", tables, view, kGrace);
  EXPECT_EQ(plan.share, 2);
  EXPECT_THAT(plan.keep, SizeIs(2));
  EXPECT_THAT(plan.release, IsEmpty());
  // With a third live instance holding nothing, share drops to 1 and a
  // hands one over (the room is 1 for b; c is at its share).
  view.alive.push_back("b");
  plan = PlanLeases("a", tables, view, kGrace);
  EXPECT_EQ(plan.share, 1);
  EXPECT_THAT(plan.keep, SizeIs(1));
  EXPECT_THAT(plan.release, SizeIs(1));
}

TEST(LeasePlanTest, LongFreeTableIsTakenEvenAtShare) {
  // Four tables, two instances: share 2. a holds its share.
  LeaseView view{kNow,
                 {"a", "b"},
                 {Live("db.t0", "a"), Live("db.t1", "a"), Live("db.t2", "b"),
                  LeaseRow{"db.t3", "", 0, kNow - 11 * kSec}}};
  LeasePlan plan = PlanLeases("a", Tables(4), view, kGrace);
  EXPECT_EQ(plan.share, 2);
  EXPECT_THAT(plan.keep, SizeIs(2));
  // Free for 11 s > grace: nobody took it, so a does.
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t3"}));
  // Free for 1 s: left to b, which is under its share.
  view.leases[3].expires = kNow - kSec;
  plan = PlanLeases("a", Tables(4), view, kGrace);
  EXPECT_THAT(plan.acquire, IsEmpty());
  EXPECT_THAT(PlanLeases("b", Tables(4), view, kGrace).acquire,
              UnorderedElementsAreArray({"db.t3"}));
}

TEST(LeasePlanTest, IgnoresLeasesOfTablesNotServed) {
  LeaseView view{kNow, {"a"}, {Live("db.gone", "a")}};
  const LeasePlan plan = PlanLeases("a", {"db.t0"}, view, kGrace);
  EXPECT_THAT(plan.keep, IsEmpty());
  EXPECT_THAT(plan.release, IsEmpty());
  EXPECT_THAT(plan.acquire, UnorderedElementsAreArray({"db.t0"}));
}

// Three instances that plan in turn on the state the others left converge
// to 4/4/4 for 12 tables; one leaving gives 6/6; it coming back gives
// 4/4/4 again; every table has exactly one owner throughout.
TEST(LeasePlanTest, SimulatedInstancesSpreadAndRebalance) {
  const std::vector<std::string> tables = Tables(12);
  std::map<std::string, std::string> owner;  // table -> instance
  std::map<std::string, int64_t> freed_at;
  int64_t now = kNow;
  auto step = [&](const std::vector<std::string>& alive) {
    for (const std::string& self : alive) {
      LeaseView view{now, alive, {}};
      for (const std::string& t : tables) {
        auto it = owner.find(t);
        if (it != owner.end()) {
          view.leases.push_back(Live(t, it->second));
          view.leases.back().expires = now + 5 * kSec;
        } else if (freed_at.contains(t)) {
          view.leases.push_back(LeaseRow{t, "", 0, freed_at[t]});
        }
      }
      const LeasePlan plan = PlanLeases(self, tables, view, kGrace);
      for (const std::string& t : plan.release) {
        owner.erase(t);
        freed_at[t] = now;
      }
      for (const std::string& t : plan.acquire) {
        if (!owner.contains(t)) owner[t] = self;  // the conditional UPDATE
      }
      now += kSec / 4;
    }
  };
  auto counts = [&] {
    std::map<std::string, int> c;
    for (const auto& [t, o] : owner) ++c[o];
    return c;
  };
  step({"a"});
  EXPECT_EQ(counts(), (std::map<std::string, int>{{"a", 12}}));
  for (int i = 0; i < 4; ++i) step({"a", "b", "c"});
  EXPECT_EQ(counts(),
            (std::map<std::string, int>{{"a", 4}, {"b", 4}, {"c", 4}}));
  // c dies: its leases expire.
  for (auto it = owner.begin(); it != owner.end();) {
    if (it->second == "c") {
      freed_at[it->first] = now;
      it = owner.erase(it);
    } else {
      ++it;
    }
  }
  for (int i = 0; i < 4; ++i) step({"a", "b"});
  EXPECT_EQ(counts(), (std::map<std::string, int>{{"a", 6}, {"b", 6}}));
  for (int i = 0; i < 4; ++i) step({"a", "b", "c"});
  EXPECT_EQ(counts(),
            (std::map<std::string, int>{{"a", 4}, {"b", 4}, {"c", 4}}));
  EXPECT_EQ(owner.size(), 12u);
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
