// The Galera fault campaign (docs/galera.md#the-fault-campaign): a measurement,
// not a CI test (DISABLED_; about 15 minutes). Run it with
//
//   build-galera/tests/galera_campaign_test --gtest_also_run_disabled_tests
//
// (root, galera-4; MSGQ_GALERA_CAMPAIGN_ROUNDS=N for N rounds of three
// faults, 7 by default: 21 faults).
//
// A three-node cluster with node 2 in a network namespace
// (tests/galera_netns_fixture.h); two msgqd with the default flags (leases
// on, 5 s), A given the nodes 0,1,2 and B 1,2,0; two tables; producers on
// every node into both tables (60 rows/s in all); subscribers on both
// msgqd, acking as they go (falling back to the other msgqd). Each round:
//   - kill -9 of one msgqd (A, B, A, ...), restarted on its port 1 s later
//     (new subscribers on it);
//   - node 2 partitioned from the others for 10 s (packets dropped), then
//     healed, until it is synced again;
//   - kill -9 of node (round mod 3), restarted 5 s later (IST).
// 20 s of steady traffic between faults. Then the producers stop and every
// committed row must arrive (lost must be 0: the one assertion). Reported:
// duplicates, inside the ack wait (10 s), after an OK ack; delivery
// latency (first arrival minus the INSERT's return) p50/p99 for rows
// committed near a fault (from 1 s before it starts to 5 s after it
// recovered) and for the others.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
constexpr absl::Duration kSteady = absl::Seconds(20);
const std::vector<std::string> kTables = {"c0", "c1"};

struct Fault {
  std::string kind;
  absl::Time start;
  absl::Time end;  // recovered: msgqd back, node synced
};

int Rounds() {
  int n = 7;
  const char* env = std::getenv("MSGQ_GALERA_CAMPAIGN_ROUNDS");
  if (env != nullptr && (!absl::SimpleAtoi(env, &n) || n < 1)) n = 7;
  return n;
}

// "p50 / p99" of `v` in ms.
std::string Percentiles(std::vector<absl::Duration> v) {
  if (v.empty()) return "-";
  std::sort(v.begin(), v.end());
  auto ms = [](absl::Duration d) { return absl::ToDoubleMilliseconds(d); };
  return absl::StrFormat("%.0f / %.0f ms (%d rows)", ms(v[v.size() / 2]),
                         ms(v[v.size() * 99 / 100]), v.size());
}

class GaleraCampaignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!GaleraNetnsCluster::Supported(&why)) GTEST_SKIP() << why;
    auto net = GaleraNetnsCluster::Start();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);
    const absl::Status s =
        CreateMessageTables(net_->cluster(), 0, kTables, kAckWait);
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    producers_.clear();
    subs_.clear();
  }

  // msgqd `i` (0 = A, 1 = B), on the port of its first start after that,
  // with new subscribers (one per table) on it.
  void StartMsgqd(int i) {
    std::vector<std::string> args = {
        absl::StrCat("--binlog_server_id=", 4300 + i)};
    if (!listen_[i].empty()) args.push_back("--listen=" + listen_[i]);
    auto m = GaleraMsgqd::Start(net_->Hosts(i == 0 ? std::vector<int>{0, 1, 2}
                                                   : std::vector<int>{1, 2, 0}),
                                args);
    ASSERT_TRUE(m.ok()) << m.status();
    msgqd_[i] = *std::move(m);
    if (listen_[i].empty()) listen_[i] = msgqd_[i]->address();
    // A new channel: the old one backs off after the kill. Earlier
    // subscribers keep theirs (they ack through it once it reconnects).
    if (stubs_[i] != nullptr) old_stubs_.push_back(std::move(stubs_[i]));
    stubs_[i] = msgqd_[i]->Stub();
  }
  void Subscribe(int i) {
    for (const std::string& t : kTables) {
      subs_.push_back(std::make_unique<AckingSubscriber>(
          stubs_[i].get(), stubs_[1 - i].get(), t));
      ASSERT_TRUE(subs_.back()->WaitForFields(absl::Seconds(30)));
      all_.push_back(subs_.back().get());
    }
  }
  bool EveryTableOwned() {
    for (const std::string& t : kTables) {
      if (FindTable(stubs_[0].get(), t).ownership().state() != "owner" &&
          FindTable(stubs_[1].get(), t).ownership().state() != "owner") {
        return false;
      }
    }
    return true;
  }

  void KillMsgqd();
  void PartitionNode2();
  void KillNode(int node);
  void Report(const std::set<std::string>& expected);

  std::unique_ptr<GaleraNetnsCluster> net_;
  std::unique_ptr<GaleraMsgqd> msgqd_[2];
  std::string listen_[2];
  std::unique_ptr<v1::Messaging::Stub> stubs_[2];
  std::vector<std::unique_ptr<v1::Messaging::Stub>> old_stubs_;
  std::vector<std::unique_ptr<AckingSubscriber>> subs_;
  std::vector<AckingSubscriber*> all_;
  std::vector<std::unique_ptr<GaleraProducer>> producers_;
  std::vector<Fault> faults_;
};

void GaleraCampaignTest::KillMsgqd() {
  const int victim = static_cast<int>(faults_.size() / 3) % 2;
  Fault f{absl::StrCat("msgqd kill -9 (", victim == 0 ? "A" : "B", ")"),
          absl::Now(),
          {}};
  msgqd_[victim]->Kill();
  absl::SleepFor(absl::Seconds(1));
  ASSERT_NO_FATAL_FAILURE(StartMsgqd(victim));
  ASSERT_NO_FATAL_FAILURE(Subscribe(victim));
  ASSERT_TRUE(Eventually([&] { return EveryTableOwned(); }, absl::Seconds(30)));
  f.end = absl::Now();
  faults_.push_back(f);
}

void GaleraCampaignTest::PartitionNode2() {
  Fault f{"partition of node 2 (10 s)", absl::Now(), {}};
  ASSERT_TRUE(net_->Partition().ok());
  absl::SleepFor(absl::Seconds(10));
  ASSERT_TRUE(net_->Heal().ok());
  ASSERT_TRUE(net_->WaitSynced(2, absl::Seconds(180)));
  f.end = absl::Now();
  faults_.push_back(f);
}

void GaleraCampaignTest::KillNode(int node) {
  Fault f{absl::StrCat("node kill -9 (node ", node, ")"), absl::Now(), {}};
  ASSERT_TRUE(net_->cluster().Kill(node).ok());
  absl::SleepFor(absl::Seconds(5));
  absl::Status s = net_->cluster().Restart(node);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(net_->WaitSynced(node, absl::Seconds(60)));
  f.end = absl::Now();
  faults_.push_back(f);
}

void GaleraCampaignTest::Report(const std::set<std::string>& expected) {
  std::map<std::string, absl::Time> first;
  for (const AckingSubscriber* s : all_) {
    for (const auto& a : s->arrivals()) {
      auto [it, inserted] = first.emplace(a.id, a.at);
      if (!inserted) it->second = std::min(it->second, a.at);
    }
  }
  std::vector<absl::Duration> near, calm;
  for (const auto& p : producers_) {
    for (const auto& [id, at] : p->committed_at()) {
      auto it = first.find(id);
      if (it == first.end()) continue;
      bool is_near = false;
      for (const Fault& f : faults_) {
        is_near = is_near || (at >= f.start - absl::Seconds(1) &&
                              at <= f.end + absl::Seconds(5));
      }
      (is_near ? near : calm).push_back(it->second - at);
    }
  }
  const Duplicates d = CountDuplicates(all_, {}, kAckWait);
  std::map<std::string, int> kinds;
  for (const Fault& f : faults_) {
    ++kinds[f.kind.substr(0, f.kind.find(" ("))];
    std::cout << "[ campaign ] " << f.kind << ": recovered in "
              << absl::FormatDuration(f.end - f.start) << "\n";
  }
  std::cout << "[ campaign ] faults: " << faults_.size();
  for (const auto& [kind, n] : kinds) std::cout << ", " << kind << " " << n;
  std::cout << "\n[ campaign ] rows committed: " << expected.size()
            << ", lost: " << Undelivered(expected, all_).size()
            << "\n[ campaign ] duplicates: " << d.total
            << ", inside the ack wait: " << d.inside
            << ", after an OK ack: " << d.after_ok_ack
            << "\n[ campaign ] latency, no fault near: " << Percentiles(calm)
            << "\n[ campaign ] latency, a fault near: " << Percentiles(near)
            << "\n";
}

TEST_F(GaleraCampaignTest, DISABLED_FaultsWithSteadyProducers) {
  for (int i = 0; i < 2; ++i) ASSERT_NO_FATAL_FAILURE(StartMsgqd(i));
  for (int i = 0; i < 2; ++i) ASSERT_NO_FATAL_FAILURE(Subscribe(i));
  for (int node = 0; node < 3; ++node) {
    for (size_t t = 0; t < kTables.size(); ++t) {
      producers_.push_back(std::make_unique<GaleraProducer>(
          net_->cluster(), node, kTables[t],
          1 + (node * 10 + static_cast<int>(t)) * 10'000'000,
          absl::Milliseconds(100)));
    }
  }
  const int rounds = Rounds();
  for (int r = 0; r < rounds; ++r) {
    absl::SleepFor(kSteady);
    ASSERT_NO_FATAL_FAILURE(KillMsgqd());
    absl::SleepFor(kSteady);
    ASSERT_NO_FATAL_FAILURE(PartitionNode2());
    absl::SleepFor(kSteady);
    ASSERT_NO_FATAL_FAILURE(KillNode(r % 3));
    std::cout << "[ campaign ] round " << r + 1 << " of " << rounds << " done\n"
              << std::flush;
  }
  absl::SleepFor(kSteady);
  for (auto& p : producers_) p->Stop();
  absl::StatusOr<std::set<std::string>> expected =
      ExpectedRows(net_->cluster(), 0, producers_, kTables);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const bool all = Eventually(
      [&] { return Undelivered(*expected, all_).empty(); }, absl::Seconds(180));
  Report(*expected);
  EXPECT_TRUE(all) << Undelivered(*expected, all_).size() << " lost";
  // An ack that returned OK committed on the cluster: no fault may send its
  // message again (docs/galera.md).
  const Duplicates d = CountDuplicates(all_, {}, kAckWait);
  EXPECT_EQ(d.after_ok_ack, 0) << "deliveries after an OK ack";
}

}  // namespace
}  // namespace msgq::testing
