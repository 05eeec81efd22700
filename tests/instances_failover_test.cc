// Two msgqd with --leases under a steady producer (docs/several-instances.md):
// the owner is killed (kill -9) or cut off from MySQL only (a frozen relay);
// the standby takes the table, every committed message is delivered and acked,
// and the duplicates are only what was in flight on the old owner.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/sql/mysql_connection.h"
#include "gtest/gtest.h"
#include "tests/instances_fixture.h"

namespace msgq::testing {
namespace {

// Rows of msgq.q: all of them, and those not acked.
std::pair<std::string, std::string> Counts(PrivateMariaDb& db) {
  return {db.Scalar("SELECT COUNT(*) FROM msgq.q"),
          db.Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL")};
}

class FailoverTest : public InstancesTest {
 protected:
  // Starts `a` (extra args `a_args`) and waits until it owns q, then `b`;
  // two acking subscribers on each, acking every 100 ms; acks of a's fall
  // back to b when `a_acks_fall_back` and come every `a_ack_every`; b's
  // always fall back to a.
  void StartPair(std::vector<std::string> a_args, bool a_acks_fall_back,
                 absl::Duration a_ack_every,
                 const std::string& directives = "vt_ack_wait=10") {
    ASSERT_NO_FATAL_FAILURE(CreateTable("q", directives));
    a_args.push_back("--instance_id=a");
    a_ = StartInstance(std::move(a_args));
    ASSERT_TRUE(a_ != nullptr);
    ASSERT_TRUE(Eventually([&] { return State(*a_, "q") == "owner"; },
                           absl::Seconds(20)));
    b_ = StartInstance({"--instance_id=b"});
    ASSERT_TRUE(b_ != nullptr);
    a_stub_ = a_->Stub();
    b_stub_ = b_->Stub();
    for (int i = 0; i < 2; ++i) {
      on_a_.push_back(std::make_unique<AckingSubscriber>(
          a_stub_.get(), a_acks_fall_back ? b_stub_.get() : nullptr, "q",
          a_ack_every));
      on_b_.push_back(std::make_unique<AckingSubscriber>(b_stub_.get(),
                                                         a_stub_.get(), "q"));
    }
    for (AckingSubscriber* s : All()) {
      ASSERT_TRUE(s->WaitForFields(absl::Seconds(10)));
    }
    // "standby" is also what b says before its first lease round, when it
    // knows no owner yet: wait until it names a.
    ASSERT_TRUE(Eventually(
        [&] {
          return State(*b_, "q") == "standby" &&
                 FindTable(b_stub_.get(), "q").ownership().owner() == "a";
        },
        absl::Seconds(20)));
  }
  std::vector<AckingSubscriber*> OnA() const { return Raw(on_a_); }
  std::vector<AckingSubscriber*> OnB() const { return Raw(on_b_); }
  std::vector<AckingSubscriber*> All() const {
    std::vector<AckingSubscriber*> out = OnA();
    for (AckingSubscriber* s : OnB()) out.push_back(s);
    return out;
  }
  // Waits until every committed id was received and every row is acked.
  void ExpectAllReceivedAndAcked(const std::set<std::string>& committed) {
    std::set<std::string> missing;
    const bool ok = Eventually(
        [&] {
          const std::multiset<std::string> got = Received(All());
          missing.clear();
          for (const std::string& id : committed) {
            if (!got.contains(id)) missing.insert(id);
          }
          return missing.empty() && Counts(*db_).second == "0";
        },
        absl::Seconds(60));
    EXPECT_TRUE(ok) << missing.size() << " never received, first "
                    << (missing.empty() ? "-" : *missing.begin());
    EXPECT_EQ(Counts(*db_), std::make_pair(std::to_string(committed.size()),
                                           std::string("0")));
  }

  std::unique_ptr<Relay> relay_;  // outlives a_, which may use it
  std::unique_ptr<Msgqd> a_, b_;
  std::unique_ptr<v1::Messaging::Stub> a_stub_, b_stub_;
  std::vector<std::unique_ptr<AckingSubscriber>> on_a_, on_b_;

 private:
  static std::vector<AckingSubscriber*> Raw(
      const std::vector<std::unique_ptr<AckingSubscriber>>& v) {
    std::vector<AckingSubscriber*> out;
    for (const auto& s : v) out.push_back(s.get());
    return out;
  }
};

TEST_F(FailoverTest, KillingTheOwnerUnderASteadyProducer) {
  // a's subscribers ack where their messages came from only, twice a
  // second: what a sent and they had not acked when it died is sent again
  // by b (so the test sees duplicates to count).
  ASSERT_NO_FATAL_FAILURE(
      StartPair({}, /*a_acks_fall_back=*/false, absl::Milliseconds(500)));
  EXPECT_EQ(FindTable(b_stub_.get(), "q").ownership().owner(), "a");
  Producer producer(*db_, "q", absl::Milliseconds(5));
  ASSERT_TRUE(Eventually([&] { return Received(OnA()).size() >= 200; },
                         absl::Seconds(30)));
  a_->Kill();
  // Produce on through the takeover, then stop.
  ASSERT_TRUE(Eventually([&] { return Received(OnB()).size() >= 200; },
                         absl::Seconds(30)));
  producer.Stop();
  EXPECT_EQ(producer.failures(), 0);
  const std::set<std::string> committed = producer.committed_ids();
  ASSERT_NO_FATAL_FAILURE(ExpectAllReceivedAndAcked(committed));
  EXPECT_EQ(State(*b_, "q"), "owner");
  EXPECT_EQ(FindTable(b_stub_.get(), "q").ownership().owner(), "b");

  // In flight on the killed owner: what its subscribers received (before
  // the kill or, from buffers, after it) and never acked. Their acks go to
  // a only, so an ack that returned OK committed while a lived, and a row
  // acked is never read again (the new owner reads unacked rows only). A
  // row a sent that no subscriber received is received once, later (at
  // once if a's postpone had not committed, after the 10 s ack wait if it
  // had). So exactly the in-flight rows may come twice. The server caps
  // only unwritten batches per stream (--max_batches_per_subscriber), not
  // unacked messages, so no flag gives a tighter number: the bound is what
  // the clients held unacked.
  std::set<std::string> in_flight;
  for (AckingSubscriber* s : OnA()) {
    const std::map<std::string, absl::Time> acked = s->acked();
    for (const std::string& id : s->ids()) {
      if (!acked.contains(id)) in_flight.insert(id);
    }
  }
  const std::multiset<std::string> got = Received(All());
  size_t duplicates = 0;
  std::vector<std::string> unexpected;
  for (auto it = got.begin(); it != got.end(); it = got.upper_bound(*it)) {
    const size_t n = got.count(*it);
    if (n < 2) continue;
    duplicates += n - 1;
    if (!in_flight.contains(*it)) unexpected.push_back(*it);
  }
  EXPECT_TRUE(unexpected.empty())
      << unexpected.size() << " sent twice but not in flight at the kill, "
      << "first " << unexpected.front();
  EXPECT_LE(duplicates, in_flight.size());
  EXPECT_EQ(got.size(), committed.size() + duplicates);
  RecordProperty("committed", static_cast<int>(committed.size()));
  RecordProperty("in_flight", static_cast<int>(in_flight.size()));
  RecordProperty("duplicates", static_cast<int>(duplicates));
  std::printf(
      "kill -9 under a producer: %zu committed, %zu in flight on "
      "the killed owner, %zu duplicates\n",
      committed.size(), in_flight.size(), duplicates);
}

// The owner frozen by SIGSTOP under the producer: b takes q and delivers
// what comes; a, woken, finds its grant run out and sends nothing more.
//
// "Nothing more" is what a decides after the wake. A batch a handed to
// gRPC before the freeze may reach the wire only after it (gRPC's writer
// was stopped with the rest of a); no process can fence a write it already
// queued. Such a batch holds rows a had before the freeze, so anything
// from a that arrives after the wake must be a row whose INSERT started
// before the freeze ended in a stopped a (under ASan, one batch from a has
// arrived after the wake). A woken a that
// went on sending would send the rows produced while it was frozen or
// after, which b is delivering: those fail the test.
TEST_F(FailoverTest, AFrozenOwnerUnderASteadyProducerSendsNothingAfterWaking) {
  ASSERT_NO_FATAL_FAILURE(
      StartPair({}, /*a_acks_fall_back=*/true, absl::Milliseconds(100)));
  Producer producer(*db_, "q", absl::Milliseconds(5));
  ASSERT_TRUE(Eventually([&] { return Received(OnA()).size() >= 200; },
                         absl::Seconds(30)));
  ASSERT_TRUE(StopAndWait(a_->pid()));
  const absl::Time frozen = absl::Now();  // every thread of a stopped
  ASSERT_TRUE(Eventually([&] { return Received(OnB()).size() >= 200; },
                         absl::Seconds(30)));
  const absl::Time woken = absl::Now();
  ASSERT_EQ(kill(a_->pid(), SIGCONT), 0);
  EXPECT_TRUE(Eventually([&] { return State(*a_, "q") == "standby"; },
                         absl::Seconds(30)));
  const size_t at_wake = Received(OnB()).size();
  ASSERT_TRUE(
      Eventually([&] { return Received(OnB()).size() >= at_wake + 100; },
                 absl::Seconds(30)));
  producer.Stop();
  EXPECT_EQ(producer.failures(), 0);
  ASSERT_NO_FATAL_FAILURE(ExpectAllReceivedAndAcked(producer.committed_ids()));
  EXPECT_EQ(FindTable(b_stub_.get(), "q").ownership().owner(), "b");
  EXPECT_EQ(FindTable(a_stub_.get(), "q").ownership().owner(), "b");
  // What a wrote before it froze was read at once (the kernel delivers it
  // while a is stopped); what arrives after the wake is at most what a had
  // queued in gRPC before the freeze: rows produced before it.
  std::set<std::string> produced_before_freeze;
  for (const Producer::Insert& insert : producer.committed()) {
    if (insert.started < frozen) produced_before_freeze.insert(insert.id);
  }
  std::vector<std::string> a_after_wake;
  std::set<std::string> from_a;
  for (AckingSubscriber* s : OnA()) {
    for (const AckingSubscriber::Arrival& a : s->arrivals()) {
      if (a.at > woken) a_after_wake.push_back(a.id);
      from_a.insert(a.id);
    }
  }
  for (const std::string& id : a_after_wake) {
    EXPECT_TRUE(produced_before_freeze.contains(id))
        << id << " sent by a after its wake, produced while it was frozen";
  }
  RecordProperty("a_after_wake", static_cast<int>(a_after_wake.size()));
  // Sent twice only if a had sent it before it froze.
  const std::multiset<std::string> got = Received(All());
  size_t duplicates = 0;
  for (auto it = got.begin(); it != got.end(); it = got.upper_bound(*it)) {
    if (got.count(*it) < 2) continue;
    duplicates += got.count(*it) - 1;
    EXPECT_TRUE(from_a.contains(*it)) << *it << " sent twice, not by a";
  }
  std::printf("SIGSTOP of the owner: %zu duplicates\n", duplicates);
}

// The owner frozen by SIGSTOP for longer than its lease while it holds a
// backlog it may send only at 100 rows/s (msgq_rate_limit): woken, it must
// send none of the backlog, which b now owns. What may still arrive from a
// after the wake is what it had decided to send before the freeze: per
// subscriber at most --max_batches_per_subscriber (2) unwritten batches and
// one being handed over, each of one row (msgq_rate_burst=1).
TEST_F(FailoverTest, AFrozenOwnerWithABacklogSendsNoneOfItAfterWaking) {
  ASSERT_NO_FATAL_FAILURE(
      StartPair({}, /*a_acks_fall_back=*/true, absl::Milliseconds(100),
                "vt_ack_wait=10,msgq_rate_limit=100,msgq_rate_burst=1"));
  constexpr int kRows = 1500;
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, kRows));
  ASSERT_TRUE(Eventually([&] { return Received(OnA()).size() >= 100; },
                         absl::Seconds(30)));
  ASSERT_TRUE(StopAndWait(a_->pid()));
  const absl::Time frozen = absl::Now();
  ASSERT_TRUE(Eventually([&] { return Received(OnB()).size() >= 50; },
                         absl::Seconds(30)));
  ASSERT_GT(absl::Now() - frozen, kLease);
  const absl::Time woken = absl::Now();
  ASSERT_EQ(kill(a_->pid(), SIGCONT), 0);
  EXPECT_TRUE(Eventually([&] { return State(*a_, "q") == "standby"; },
                         absl::Seconds(30)));
  ASSERT_NO_FATAL_FAILURE(ExpectAllReceivedAndAcked(Range(1, kRows)));
  EXPECT_EQ(FindTable(b_stub_.get(), "q").ownership().owner(), "b");

  std::set<std::string> a_after_wake;
  for (AckingSubscriber* s : OnA()) {
    for (const AckingSubscriber::Arrival& x : s->arrivals()) {
      if (x.at > woken) a_after_wake.insert(x.id);
    }
  }
  std::printf(
      "SIGSTOP of an owner with a backlog: %zu rows from it after the "
      "wake, %zu from b\n",
      a_after_wake.size(), Received(OnB()).size());
  EXPECT_LE(a_after_wake.size(), 3 * OnA().size());
}

// The owner loses MySQL (a frozen relay: no reset, its statements hang)
// but not its subscribers. Its grant runs out a quarter lease before the
// lease can expire (engine/lease/lease_keeper.h), b takes q and delivers
// every new row, and once the relay is thawed a sees b's lease and stays
// a standby.
TEST_F(FailoverTest, AnOwnerCutOffFromMysqlStopsBeforeItsLeaseEnds) {
  absl::StatusOr<std::unique_ptr<Relay>> relay = Relay::Start(db_->port());
  ASSERT_TRUE(relay.ok()) << relay.status();
  relay_ = *std::move(relay);
  ASSERT_NO_FATAL_FAILURE(
      StartPair({"--mysql_socket=", "--mysql_host=127.0.0.1",
                 absl::StrCat("--mysql_port=", relay_->port())},
                /*a_acks_fall_back=*/true, absl::Milliseconds(100)));
  Producer producer(*db_, "q", absl::Milliseconds(5));
  ASSERT_TRUE(Eventually([&] { return Received(OnA()).size() >= 200; },
                         absl::Seconds(30)));
  const absl::Time frozen = absl::Now();
  ASSERT_TRUE(relay_->Freeze());
  ASSERT_TRUE(Eventually([&] { return State(*b_, "q") == "owner"; },
                         absl::Seconds(30)));
  ASSERT_TRUE(Eventually([&] { return Received(OnB()).size() >= 200; },
                         absl::Seconds(30)));
  const absl::Time thawed = absl::Now();
  ASSERT_TRUE(relay_->Thaw());
  // a reads the lease rows again: b holds q.
  EXPECT_TRUE(Eventually([&] { return State(*a_, "q") == "standby"; },
                         absl::Seconds(30)));
  EXPECT_EQ(FindTable(a_stub_.get(), "q").ownership().owner(), "b");
  const size_t at_thaw = Received(OnB()).size();
  ASSERT_TRUE(
      Eventually([&] { return Received(OnB()).size() >= at_thaw + 100; },
                 absl::Seconds(30)));
  producer.Stop();
  EXPECT_EQ(producer.failures(), 0);
  ASSERT_NO_FATAL_FAILURE(ExpectAllReceivedAndAcked(producer.committed_ids()));
  EXPECT_EQ(State(*a_, "q"), "standby");
  EXPECT_EQ(State(*b_, "q"), "owner");
  EXPECT_EQ(FindTable(b_stub_.get(), "q").ownership().owner(), "b");

  // Fencing. a's last successful renewal started at t0 < frozen (its
  // answer crossed the relay before the freeze); MySQL set the lease's end
  // at t0 + L or later, and a was granted sending until t0 + 3L/4. So a
  // sends nothing after frozen + 3L/4, and b nothing before t0 + L. The
  // arrivals are stamped by the subscribers' threads a little after the
  // send: the quarter lease (500 ms) between a's grant and the lease's end
  // is the margin for that delay on a loaded machine.
  absl::Time last_a = absl::InfinitePast(), first_b = absl::InfiniteFuture();
  size_t a_after_thaw = 0;
  for (AckingSubscriber* s : OnA()) {
    for (const AckingSubscriber::Arrival& a : s->arrivals()) {
      last_a = std::max(last_a, a.at);
      a_after_thaw += a.at > thawed;
    }
  }
  for (AckingSubscriber* s : OnB()) {
    for (const AckingSubscriber::Arrival& a : s->arrivals()) {
      first_b = std::min(first_b, a.at);
    }
  }
  EXPECT_LE(last_a, frozen + kLease)
      << "a sent " << absl::FormatDuration(last_a - frozen)
      << " after it was cut off";
  EXPECT_LT(last_a, first_b)
      << "b's first arrival came " << absl::FormatDuration(last_a - first_b)
      << " before a's last";
  EXPECT_EQ(a_after_thaw, 0u);
  // a could read nothing inserted after the freeze: b sent all of it.
  const std::multiset<std::string> on_b = Received(OnB());
  size_t after_freeze = 0;
  for (const Producer::Insert& i : producer.committed()) {
    if (i.started <= frozen) continue;
    ++after_freeze;
    EXPECT_TRUE(on_b.contains(i.id)) << i.id;
  }
  EXPECT_GT(after_freeze, 0u);
  std::printf(
      "cut off from MySQL: a's last arrival %s after the freeze, b's first "
      "%s after it; %zu rows inserted after the freeze\n",
      absl::FormatDuration(last_a - frozen).c_str(),
      absl::FormatDuration(first_b - frozen).c_str(), after_freeze);
}

// Fencing when only the keeper is stuck. A test session locks a's
// heartbeat row, so a's lease renewals hang while its manager still reads
// and sends: the only thing that stops a is its grant, which ends a
// quarter lease before the lease can (engine/lease/lease_keeper.h). a's
// sends are rate limited (msgq_rate_limit) so it holds a backlog in its
// cache. The test checks a did send after the lock (else it proves
// nothing), stopped by locked + L, and that b's first message came after
// a's last: a grant as long as the lease or longer fails here.
TEST_F(FailoverTest, AnOwnerThatCannotRenewStopsBeforeTheStandbySends) {
  ASSERT_NO_FATAL_FAILURE(
      StartPair({}, /*a_acks_fall_back=*/true, absl::Milliseconds(100),
                "vt_ack_wait=10,msgq_rate_limit=100,msgq_rate_burst=1"));
  constexpr int kRows = 1000;
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, kRows));
  // A second of sends: the rest waits in a's cache for tokens.
  ASSERT_TRUE(Eventually([&] { return Received(OnA()).size() >= 100; },
                         absl::Seconds(30)));
  absl::StatusOr<std::unique_ptr<MysqlConnection>> locker = db_->Connect();
  ASSERT_TRUE(locker.ok()) << locker.status();
  ASSERT_TRUE((*locker)->Execute("BEGIN").ok());
  const absl::Time locked = absl::Now();
  absl::StatusOr<QueryResult> row = (*locker)->Query(
      "SELECT instance FROM msgq.msgq_instances WHERE instance = 'a' FOR "
      "UPDATE");
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_EQ(row->rows.size(), 1u);
  ASSERT_TRUE(Eventually([&] { return State(*b_, "q") == "owner"; },
                         absl::Seconds(30)));
  ASSERT_TRUE(Eventually([&] { return Received(OnB()).size() >= 50; },
                         absl::Seconds(30)));
  ASSERT_TRUE((*locker)->Execute("ROLLBACK").ok());
  EXPECT_TRUE(Eventually([&] { return State(*a_, "q") == "standby"; },
                         absl::Seconds(30)));
  ASSERT_NO_FATAL_FAILURE(ExpectAllReceivedAndAcked(Range(1, kRows)));

  absl::Time last_a = absl::InfinitePast(), first_b = absl::InfiniteFuture();
  size_t a_after_lock = 0;
  for (AckingSubscriber* s : OnA()) {
    for (const AckingSubscriber::Arrival& a : s->arrivals()) {
      last_a = std::max(last_a, a.at);
      a_after_lock += a.at > locked;
    }
  }
  for (AckingSubscriber* s : OnB()) {
    for (const AckingSubscriber::Arrival& a : s->arrivals()) {
      first_b = std::min(first_b, a.at);
    }
  }
  // At 100/s for up to 3L/4 after the last renewal (1.5 s): ~50 to 150.
  EXPECT_GE(a_after_lock, 20u);
  EXPECT_LE(last_a, locked + kLease)
      << "a sent " << absl::FormatDuration(last_a - locked)
      << " after its renewals stopped";
  EXPECT_LT(last_a, first_b)
      << "b's first arrival came " << absl::FormatDuration(last_a - first_b)
      << " before a's last";
  std::printf(
      "owner unable to renew: a sent %zu after the lock, its last %s after "
      "it; b's first %s after it\n",
      a_after_lock, absl::FormatDuration(last_a - locked).c_str(),
      absl::FormatDuration(first_b - locked).c_str());
}

}  // namespace
}  // namespace msgq::testing
