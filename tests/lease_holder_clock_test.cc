// Leases while msgqd's own wall clock steps 30 s (libfaketime,
// tests/faketime.h; MariaDB's clock and both monotonic clocks untouched):
// the lease code reads no wall clock of msgqd's
// (docs/design/lease-clocks.md), so a step changes neither who holds a
// table nor when a holder stops or a standby takes over.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/sql/mysql_connection.h"
#include "gtest/gtest.h"
#include "tests/faketime.h"
#include "tests/instances_fixture.h"

namespace msgq::testing {
namespace {

class LeaseHolderClockTest : public InstancesTest {
 protected:
  // msgqd `id` with --leases, a lease of `lease` and its wall clock
  // offset by `clock`.
  std::unique_ptr<Msgqd> StartFaked(const std::string& id, absl::Duration lease,
                                    const FaketimeOffset& clock) {
    auto server = Msgqd::Start(
        *db_,
        {"--databases=msgq", "--schema_reload_interval=200ms", "--leases",
         absl::StrCat("--lease_duration=", absl::FormatDuration(lease)),
         absl::StrCat("--instance_id=", id)},
        clock.Env());
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }
  std::unique_ptr<FaketimeOffset> NewClock() {
    absl::StatusOr<std::unique_ptr<FaketimeOffset>> clock =
        FaketimeOffset::Create();
    EXPECT_TRUE(clock.ok()) << clock.status();
    return clock.ok() ? *std::move(clock) : nullptr;
  }
  // `a` started and owning q, then `b` a standby that names a.
  void StartPair(absl::Duration lease) {
    a_clock_ = NewClock();
    b_clock_ = NewClock();
    ASSERT_TRUE(a_clock_ != nullptr && b_clock_ != nullptr);
    a_ = StartFaked("a", lease, *a_clock_);
    ASSERT_TRUE(a_ != nullptr);
    ASSERT_TRUE(Eventually([&] { return State(*a_, "q") == "owner"; },
                           absl::Seconds(20)));
    b_ = StartFaked("b", lease, *b_clock_);
    ASSERT_TRUE(b_ != nullptr);
    a_stub_ = a_->Stub();
    b_stub_ = b_->Stub();
    on_a_ =
        std::make_unique<AckingSubscriber>(a_stub_.get(), b_stub_.get(), "q");
    on_b_ =
        std::make_unique<AckingSubscriber>(b_stub_.get(), a_stub_.get(), "q");
    ASSERT_TRUE(on_a_->WaitForFields(absl::Seconds(10)));
    ASSERT_TRUE(on_b_->WaitForFields(absl::Seconds(10)));
    ASSERT_TRUE(Eventually(
        [&] {
          return State(*b_, "q") == "standby" &&
                 FindTable(b_stub_.get(), "q").ownership().owner() == "a";
        },
        absl::Seconds(20)));
  }
  // The lease row of q: "owner since".
  std::string LeaseRow() {
    return db_->Scalar(
        "SELECT CONCAT(owner, ' ', since) FROM msgq.msgq_leases WHERE name "
        "LIKE '%q'");
  }

  std::unique_ptr<FaketimeOffset> a_clock_, b_clock_;
  std::unique_ptr<Msgqd> a_, b_;
  std::unique_ptr<v1::Messaging::Stub> a_stub_, b_stub_;
  std::unique_ptr<AckingSubscriber> on_a_, on_b_;
};

// Both instances' clocks step 30 s forward and back in turn while the
// holder renews under a steady producer: the lease stays a's from the
// same `since`, b sends nothing, every row comes once.
TEST_F(LeaseHolderClockTest, StepsOfEitherClockNeitherMoveNorDropTheLease) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=30"));
  ASSERT_NO_FATAL_FAILURE(StartPair(kLease));
  const std::string row = LeaseRow();
  ASSERT_EQ(row.rfind("a ", 0), 0u) << row;
  Producer producer(*db_, "q", absl::Milliseconds(10));
  // Each offset held for more than a lease plus libfaketime's re-read.
  for (FaketimeOffset* clock : {a_clock_.get(), b_clock_.get()}) {
    for (int offset : {30, 0, -30, 0}) {
      clock->Set(offset);
      absl::SleepFor(kLease + absl::Seconds(2));
      EXPECT_EQ(State(*a_, "q"), "owner") << "offset " << offset;
      EXPECT_EQ(State(*b_, "q"), "standby") << "offset " << offset;
    }
  }
  producer.Stop();
  EXPECT_EQ(producer.failures(), 0);
  const std::set<std::string> committed = producer.committed_ids();
  ASSERT_GT(committed.size(), 1000u);
  ASSERT_TRUE(Eventually(
      [&] { return Received({on_a_.get()}).size() >= committed.size(); },
      absl::Seconds(30)));
  EXPECT_EQ(LeaseRow(), row);
  EXPECT_EQ(on_b_->ids().size(), 0u);
  const std::multiset<std::string> got = Received({on_a_.get()});
  EXPECT_EQ(got.size(), committed.size());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), committed);
}

// Which instance's clock steps while the holder cannot renew.
struct StuckCase {
  bool holder;  // a (the holder) or b (the standby)
  int seconds;
};

class StuckHolderClockTest : public LeaseHolderClockTest,
                             public ::testing::WithParamInterface<StuckCase> {};

// a's renewals hang (a session holds its heartbeat row) and, right after,
// a's clock steps 30 s back, or b's 30 s forward. a must stop sending by its
// grant's end (3/4 of the lease after its last renewal started, on its
// monotonic clock), and b must not take the table before the lease's end:
// b's first message comes after a's last. A lease of 8 s leaves
// libfaketime (which re-reads the offset within about a second) the time
// to step the clock inside a's grant.
TEST_P(StuckHolderClockTest, HolderStopsAtItsGrantAndStandbyWaitsTheLease) {
  constexpr absl::Duration kLongLease = absl::Seconds(8);
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=30,msgq_rate_limit=100,msgq_rate_burst=1"));
  ASSERT_NO_FATAL_FAILURE(StartPair(kLongLease));
  constexpr int kRows = 1500;
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, kRows));
  ASSERT_TRUE(Eventually([&] { return on_a_->ids().size() >= 100; },
                         absl::Seconds(30)));
  absl::StatusOr<std::unique_ptr<MysqlConnection>> locker = db_->Connect();
  ASSERT_TRUE(locker.ok()) << locker.status();
  ASSERT_TRUE((*locker)->Execute("BEGIN").ok());
  const absl::Time locked = absl::Now();
  absl::StatusOr<QueryResult> heartbeat = (*locker)->Query(
      "SELECT instance FROM msgq.msgq_instances WHERE instance = 'a' FOR "
      "UPDATE");
  ASSERT_TRUE(heartbeat.ok()) << heartbeat.status();
  ASSERT_EQ(heartbeat->rows.size(), 1u);
  (GetParam().holder ? a_clock_ : b_clock_)->Set(GetParam().seconds);
  ASSERT_TRUE(Eventually([&] { return State(*b_, "q") == "owner"; },
                         absl::Seconds(30)));
  ASSERT_TRUE(
      Eventually([&] { return on_b_->ids().size() >= 50; }, absl::Seconds(30)));
  ASSERT_TRUE((*locker)->Execute("ROLLBACK").ok());
  EXPECT_TRUE(Eventually([&] { return State(*a_, "q") == "standby"; },
                         absl::Seconds(30)));
  std::set<std::string> missing;
  EXPECT_TRUE(Eventually(
      [&] {
        const std::multiset<std::string> got =
            Received({on_a_.get(), on_b_.get()});
        missing.clear();
        for (const std::string& id : Range(1, kRows)) {
          if (!got.contains(id)) missing.insert(id);
        }
        return missing.empty();
      },
      absl::Seconds(40)))
      << missing.size() << " never received";

  absl::Time last_a = absl::InfinitePast(), first_b = absl::InfiniteFuture();
  size_t a_after_lock = 0;
  for (const AckingSubscriber::Arrival& x : on_a_->arrivals()) {
    last_a = std::max(last_a, x.at);
    a_after_lock += x.at > locked;
  }
  for (const AckingSubscriber::Arrival& x : on_b_->arrivals()) {
    first_b = std::min(first_b, x.at);
  }
  std::printf(
      "a sent %zu after the lock, its last %s after it; b's first %s after "
      "it\n",
      a_after_lock, absl::FormatDuration(last_a - locked).c_str(),
      absl::FormatDuration(first_b - locked).c_str());
  // At 100/s for up to 3/4 of the lease after the last renewal (6 s).
  EXPECT_GE(a_after_lock, 100u);
  EXPECT_LE(last_a, locked + kLongLease)
      << "a sent " << absl::FormatDuration(last_a - locked)
      << " after its renewals stopped";
  // The last renewal started at most a renewal round (lease / 5) before
  // the lock; b may take the lease once it has read it unchanged for a
  // whole lease after that.
  EXPECT_GE(first_b, locked + kLongLease - kLongLease / 5)
      << "b sent " << absl::FormatDuration(first_b - locked)
      << " after a's renewals stopped";
  EXPECT_LT(last_a, first_b)
      << "b's first arrival came " << absl::FormatDuration(last_a - first_b)
      << " before a's last";
}

INSTANTIATE_TEST_SUITE_P(
    Steps, StuckHolderClockTest,
    ::testing::Values(StuckCase{true, -30}, StuckCase{false, 30}),
    [](const ::testing::TestParamInfo<StuckCase>& info) {
      return absl::StrCat(info.param.holder ? "HolderBack" : "StandbyForward",
                          std::abs(info.param.seconds), "s");
    });

}  // namespace
}  // namespace msgq::testing
