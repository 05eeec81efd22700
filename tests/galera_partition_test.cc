// One Galera node partitioned from the other two
// (docs/galera.md#a-node-partitioned-away): real processes, network namespaces
// of the test's own (tests/netns_fixture.h), root only; skipped otherwise.
//
// The cluster: nodes 0 and 1 in this (root) namespace, node 2 in a
// namespace of its own behind a router (NetnsLink). Galera's traffic
// between node 2 and the others crosses the router, which the test makes
// lose every packet (no FIN, no RST): node 2 is left alone outside the
// primary component, and answers statements with error 1047. Its SQL port
// stays reachable over a side path (the app tier still sees every node;
// only the database nodes' own network is cut), its Unix socket too.
//
//   B   msgqd on node 2 only (its socket): the minority side. It takes
//       both tables first; cut off, its lease renewals fail and it must
//       stop sending before A may take its table.
//   A   msgqd given every node, node 2 first: it serves node 2 until the
//       partition, then moves to a node of the primary component and takes
//       both tables once B's lease ran out.
// The leases spread the tables, one each, a few seconds after A starts
// (engine/lease/lease_plan.h); the cut waits for that, so that it always
// finds each msgqd owning one table on node 2 (without the wait, whether A
// had its share yet would depend on the machine's load).
//
// Producers insert on all three nodes throughout (node 2's fail while it
// is cut off); subscribers on both msgqd ack as they go. Checked: never
// two owners of a table at any sample; A leaves node 2; after the heal
// every committed row is delivered (0 lost) and acked; no row is delivered
// again after an ack of it returned OK; and a row delivered again inside
// its ack wait is one the cut disturbed (docs/galera.md), that is one
// whose postpone or ack may not have committed:
//   - in flight at the cut: delivered at or before it, no ack of it
//     returned OK by then;
//   - delivered by B between the cut and the heal (B serves node 2
//     throughout);
//   - delivered by A between the cut and A leaving node 2 (its log's
//     "MySQL primary: Galera node NODE2 not served: ..."): its table's
//     postpones there fail (1047, 1180), and A sends the row again from
//     the majority.
// All are judged from the subscribers' complete records after the run, by
// the time each arrival and OK ack was stamped: a snapshot taken at the
// cut misses an arrival stamped just before it but recorded just after.
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/galera_delivery.h"
#include "tests/galera_fixture.h"
#include "tests/galera_netns_fixture.h"
#include "tests/instances_fixture.h"
#include "tests/test_env.h"

namespace msgq::testing {
namespace {

constexpr absl::Duration kAckWait = absl::Seconds(10);
const std::vector<std::string> kTables = {"p0", "p1"};

std::string State(v1::Messaging::Stub* stub, const std::string& table) {
  return FindTable(stub, table).ownership().state();
}

// Each table's ownership as `stub`'s msgqd shows it, for a failure message.
std::string Owners(v1::Messaging::Stub* stub) {
  std::string out;
  for (const std::string& t : kTables) {
    absl::StrAppend(&out, t, ": ",
                    FindTable(stub, t).ownership().ShortDebugString(), "\n");
  }
  return out;
}

// Samples both msgqd's view of each table; a table owned by both at one
// sample is a failure.
struct OwnerSampler {
  v1::Messaging::Stub* a;
  v1::Messaging::Stub* b;
  int samples = 0;
  int two_owners = 0;

  // True when A owns every table and B none.
  bool Sample() {
    bool a_all = true;
    for (const std::string& t : kTables) {
      const bool in_a = State(a, t) == "owner";
      const bool in_b = State(b, t) == "owner";
      if (in_a && in_b) {
        ++two_owners;
        ADD_FAILURE() << "`" << t << "` owned by both at sample " << samples;
      }
      a_all = a_all && in_a && !in_b;
    }
    ++samples;
    return a_all;
  }
};

class GaleraPartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!GaleraNetnsCluster::Supported(&why)) GTEST_SKIP() << why;
    const absl::Time t0 = absl::Now();
    auto net = GaleraNetnsCluster::Start();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);
    std::cout << "[ galera   ] cluster of 3 (one in a namespace) started in "
              << absl::FormatDuration(absl::Now() - t0) << "\n";
    const absl::Status s =
        CreateMessageTables(net_->cluster(), 0, kTables, kAckWait);
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    producers_.clear();
    subs_.clear();
  }

  // B first, on node 2 alone (its socket): it takes both tables. Then A,
  // given every node, node 2 first: it serves node 2, standby.
  void StartServers() {
    auto b = GaleraMsgqd::Start(
        net_->Address(2),
        {absl::StrCat("--mysql_socket=", net_->cluster().Options(2).socket),
         "--binlog_server_id=4202"});
    ASSERT_TRUE(b.ok()) << b.status();
    b_ = *std::move(b);
    b_stub_ = b_->Stub();
    ASSERT_TRUE(Eventually(
        [&] {
          for (const std::string& t : kTables) {
            if (State(b_stub_.get(), t) != "owner") return false;
          }
          return true;
        },
        absl::Seconds(30)))
        << Owners(b_stub_.get()) << b_->Log();
    auto a =
        GaleraMsgqd::Start(net_->Hosts({2, 0, 1}), {"--binlog_server_id=4201"});
    ASSERT_TRUE(a.ok()) << a.status();
    a_ = *std::move(a);
    a_stub_ = a_->Stub();
    ASSERT_TRUE(Eventually([&] { return a_->ServedNode() == net_->Address(2); },
                           absl::Seconds(15)))
        << a_->Log();
  }

  // Subscribers on both msgqd (acks falling back to the other), producers
  // on every node into every table; returns once 150 rows arrived.
  void StartTraffic() {
    for (const std::string& t : kTables) {
      subs_.push_back(
          std::make_unique<AckingSubscriber>(b_stub_.get(), a_stub_.get(), t));
      names_.push_back(absl::StrCat("B/", t));
      subs_.push_back(
          std::make_unique<AckingSubscriber>(a_stub_.get(), b_stub_.get(), t));
      names_.push_back(absl::StrCat("A/", t));
    }
    for (auto& s : subs_) {
      ASSERT_TRUE(s->WaitForFields(absl::Seconds(20))) << a_->Log();
      all_.push_back(s.get());
    }
    for (int node = 0; node < 3; ++node) {
      for (size_t t = 0; t < kTables.size(); ++t) {
        producers_.push_back(std::make_unique<GaleraProducer>(
            net_->cluster(), node, kTables[t],
            1 + (node * 10 + static_cast<int>(t)) * 1'000'000,
            absl::Milliseconds(60)));
      }
    }
    ASSERT_TRUE(Eventually([&] { return Received(all_).size() >= 150; },
                           absl::Seconds(30)))
        << b_->Log();
  }

  // Until each msgqd owns one table (the leases' fair share); returns A's.
  void WaitForOneTableEach(std::string* a_table) {
    ASSERT_TRUE(Eventually(
        [&] {
          int in_a = 0, in_b = 0;
          for (const std::string& t : kTables) {
            const bool a = State(a_stub_.get(), t) == "owner";
            const bool b = State(b_stub_.get(), t) == "owner";
            if (a && b) return false;  // the sampler's business
            if (a) *a_table = t;
            in_a += a ? 1 : 0;
            in_b += b ? 1 : 0;
          }
          return in_a == 1 && in_b == 1;
        },
        absl::Seconds(30)))
        << "A:\n"
        << Owners(a_stub_.get()) << "B:\n"
        << Owners(b_stub_.get()) << a_->Log() << b_->Log();
  }

  GaleraProducer& Producer(int node, int table) {
    return *producers_[static_cast<size_t>(node) * kTables.size() + table];
  }

  std::unique_ptr<GaleraNetnsCluster> net_;
  std::unique_ptr<GaleraMsgqd> a_, b_;
  std::unique_ptr<v1::Messaging::Stub> a_stub_, b_stub_;
  std::vector<std::unique_ptr<AckingSubscriber>> subs_;  // B's at even
  std::vector<AckingSubscriber*> all_;
  std::vector<std::string> names_;  // of all_: "B/p0", "A/p0", ...
  std::vector<std::unique_ptr<GaleraProducer>> producers_;
};

// What the partition did, for the checks and the report.
struct Cut {
  absl::Time at;               // just before the first packet was dropped
  absl::Time a_left;           // A left node 2 (its log)
  absl::Duration taken_after;  // until A served the majority, owning all
  std::string moved_to;        // the node A moved to
  // InFlight() at the cut, of the records then (for the report only).
  std::set<std::string> in_flight_recorded;
};

// How many of `ids` `seen` lacks.
size_t CountMissing(const std::set<std::string>& ids,
                    const std::set<std::string>& seen) {
  size_t n = 0;
  for (const std::string& id : ids) n += seen.count(id) == 0 ? 1 : 0;
  return n;
}

// The rows whose repeat inside the ack wait the cut explains (the file
// comment).
struct Disturbed {
  std::set<std::string> in_flight;  // at the cut
  std::set<std::string> by_a;       // sent by A from node 2 after the cut
  std::set<std::string> by_b;       // sent by B after the cut, until the heal
  std::set<std::string> all;        // the union
};
// From the complete records (B's subscribers at even indices of `all`,
// A's at odd).
Disturbed DisturbedByCut(const std::vector<AckingSubscriber*>& all,
                         const Cut& cut, absl::Time healed) {
  Disturbed d;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::set<std::string> f = InFlight(*all[i], cut.at);
    d.in_flight.insert(f.begin(), f.end());
    const bool b = i % 2 == 0;
    // A's log's millisecond: a send within it may precede the move.
    const absl::Time until = b ? healed : cut.a_left + absl::Milliseconds(1);
    const std::set<std::string> sent = ReceivedBetween(*all[i], cut.at, until);
    (b ? d.by_b : d.by_a).insert(sent.begin(), sent.end());
  }
  for (const auto* part : {&d.in_flight, &d.by_a, &d.by_b}) {
    d.all.insert(part->begin(), part->end());
  }
  return d;
}

// Node 2 leaves the primary component, A moves to node 0 or 1 and takes
// both tables once B's leases have run out (sampled every 100 ms); 5 s
// more cut off, A delivers the majority's rows and B stays standby.
void CutNode2(GaleraNetnsCluster& net, GaleraMsgqd& a, OwnerSampler& sampler,
              const std::vector<AckingSubscriber*>& all, Cut* cut) {
  sampler.Sample();
  cut->at = absl::Now();
  for (const AckingSubscriber* s : all) {
    const std::set<std::string> f = InFlight(*s, cut->at);
    cut->in_flight_recorded.insert(f.begin(), f.end());
  }
  ASSERT_TRUE(net.Partition().ok());
  const bool taken = Eventually(
      [&] {
        absl::SleepFor(absl::Milliseconds(100));
        const std::string served = a.ServedNode();
        const bool moved = served == net.Address(0) || served == net.Address(1);
        cut->taken_after = absl::Now() - cut->at;
        return sampler.Sample() && moved;
      },
      absl::Seconds(45));
  ASSERT_TRUE(taken) << a.Log();
  cut->moved_to = a.ServedNode();
  // Logged as A's check finds node 2 unservable (non-Primary) or not
  // answering, right after it stops serving it.
  const std::optional<absl::Time> left =
      a.LoggedAt(absl::StrCat("MySQL primary: Galera node ", net.Address(2),
                              " not served"),
                 cut->at);
  ASSERT_TRUE(left.has_value()) << a.Log();
  cut->a_left = *left;
  EXPECT_EQ(net.Status(2, "WSREP_CLUSTER_STATUS"), "non-Primary");
  for (absl::Time end = absl::Now() + absl::Seconds(5); absl::Now() < end;) {
    sampler.Sample();
    absl::SleepFor(absl::Milliseconds(100));
  }
  // Still A's (a ListTables answered late on a loaded machine reads as
  // not owned, so this waits rather than expects every sample).
  EXPECT_TRUE(Eventually([&] { return sampler.Sample(); }, absl::Seconds(10)));
}

TEST_F(GaleraPartitionTest, MinorityNodeIsLeftAndNothingIsLost) {
  ASSERT_NO_FATAL_FAILURE(StartServers());
  ASSERT_NO_FATAL_FAILURE(StartTraffic());
  std::string a_table;
  ASSERT_NO_FATAL_FAILURE(WaitForOneTableEach(&a_table));
  OwnerSampler sampler{a_stub_.get(), b_stub_.get()};
  const size_t majority_before = Producer(0, 0).committed().size();
  Cut cut;
  ASSERT_NO_FATAL_FAILURE(CutNode2(*net_, *a_, sampler, all_, &cut));
  EXPECT_GT(Producer(0, 0).committed().size(), majority_before);

  // The heal: node 2 rejoins (IST) and takes writes again.
  ASSERT_TRUE(net_->Heal().ok());
  const absl::Time healed_at = absl::Now();
  ASSERT_TRUE(Eventually(
      [&] {
        sampler.Sample();
        return net_->Status(2, "WSREP_LOCAL_STATE") == "4";
      },
      absl::Seconds(120)))
      << "node 2 did not rejoin\n"
      << b_->Log();
  const absl::Duration rejoined_after = absl::Now() - healed_at;
  const size_t node2_before = Producer(2, 0).committed().size();
  ASSERT_TRUE(Eventually(
      [&] { return Producer(2, 0).committed().size() >= node2_before + 20; },
      absl::Seconds(60)));
  int failed = 0;
  for (auto& p : producers_) {
    p->Stop();
    failed += p->failures();
  }

  absl::StatusOr<std::set<std::string>> expected =
      ExpectedRows(net_->cluster(), 0, producers_, kTables);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::set<std::string> missing;
  ASSERT_TRUE(Eventually(
      [&] {
        sampler.Sample();
        missing = Undelivered(*expected, all_);
        return missing.empty();
      },
      absl::Seconds(60)))
      << missing.size() << " of " << expected->size() << " never delivered, "
      << "e.g. " << *missing.begin() << "\n"
      << a_->Log() << b_->Log();
  const Disturbed disturbed = DisturbedByCut(all_, cut, healed_at);
  const Duplicates d = CountDuplicates(all_, disturbed.all, kAckWait);
  std::cout << "[ galera   ] partition: A owned `" << a_table
            << "` and B the other at the cut; A left node 2 "
            << absl::FormatDuration(cut.a_left - cut.at)
            << " after the cut, for " << cut.moved_to << ", and owned both "
            << "tables " << absl::FormatDuration(cut.taken_after)
            << " after the cut; node 2 synced again "
            << absl::FormatDuration(rejoined_after) << " after the heal; "
            << expected->size() << " rows, all delivered; " << failed
            << " producer statements failed; " << sampler.samples
            << " ownership samples, " << sampler.two_owners
            << " with two owners; " << disturbed.in_flight.size()
            << " in flight at the cut ("
            << CountMissing(disturbed.in_flight, cut.in_flight_recorded)
            << " of them recorded only after it), " << disturbed.by_a.size()
            << " sent by A and " << disturbed.by_b.size() << " by B cut off; "
            << d.total << " duplicates, " << d.inside
            << " inside the ack wait\n";
  EXPECT_EQ(sampler.two_owners, 0);
  EXPECT_EQ(d.inside_unexpected, 0);
  EXPECT_EQ(d.after_ok_ack, 0);
  if (!d.wrong.empty()) {
    ADD_FAILURE() << "relative to the cut (A left node 2 at +"
                  << absl::FormatDuration(cut.a_left - cut.at)
                  << ", owned both tables at +"
                  << absl::FormatDuration(cut.taken_after) << ", healed at +"
                  << absl::FormatDuration(healed_at - cut.at) << "):\n"
                  << DescribeDeliveries(all_, names_, d.wrong, cut.at)
                  << "cut at " << absl::FormatTime(cut.at) << "\n"
                  << a_->Log() << b_->Log();
  }
  EXPECT_TRUE(absl::StrContains(
      a_->Log(), absl::StrCat("MySQL primary: ", cut.moved_to, " (was ",
                              net_->Address(2), ")")))
      << a_->Log();
  for (const std::string& t : kTables) {
    EXPECT_TRUE(Eventually(
        [&] {
          return net_->cluster().Scalar(
                     0, absl::StrCat("SELECT COUNT(*) FROM msgq.`", t,
                                     "` WHERE time_acked IS NULL")) == "0";
        },
        absl::Seconds(30)))
        << t;
  }
}

}  // namespace
}  // namespace msgq::testing
