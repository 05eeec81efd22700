// Several msgqd on one MariaDB with --leases (issue 14): each table is sent
// by one instance only; a standby takes over when the owner dies or
// freezes; tables spread over the instances.
#include <signal.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

class InstancesTest : public MsgqTest {
 protected:
  std::unique_ptr<Msgqd> StartInstance() {
    auto server = Msgqd::Start(
        *db_, {"--databases=msgq", "--schema_reload_interval=200ms", "--leases",
               "--lease_duration=2s"});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }
  static std::string State(const Msgqd& server, const std::string& table) {
    return FindTable(server.Stub().get(), table).ownership().state();
  }
  // Ids received by `collectors`, with their count (duplicates count).
  static std::multiset<std::string> Ids(
      const std::vector<StreamCollector*>& collectors) {
    std::multiset<std::string> out;
    for (StreamCollector* c : collectors) {
      for (const std::string& id : c->ids()) out.insert(id);
    }
    return out;
  }
};

std::set<std::string> Range(int from, int to) {
  std::set<std::string> out;
  for (int i = from; i <= to; ++i) out.insert(std::to_string(i));
  return out;
}

TEST_F(InstancesTest, OneOwnerSendsAndTheStandbyTakesOverAKilledOwner) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=60"));
  std::unique_ptr<Msgqd> a = StartInstance();
  std::unique_ptr<Msgqd> b = StartInstance();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  auto a_stub = a->Stub();
  auto b_stub = b->Stub();
  StreamCollector a1(a_stub.get(), "q"), a2(a_stub.get(), "q");
  StreamCollector b1(b_stub.get(), "q"), b2(b_stub.get(), "q");
  for (StreamCollector* c : {&a1, &a2, &b1, &b2}) {
    ASSERT_TRUE(c->WaitForFields(absl::Seconds(10)));
  }
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string sa = State(*a, "q"), sb = State(*b, "q");
        return (sa == "owner" && sb == "standby") ||
               (sa == "standby" && sb == "owner");
      },
      absl::Seconds(10)));
  const bool a_owns = State(*a, "q") == "owner";
  Msgqd& owner = a_owns ? *a : *b;
  Msgqd& standby = a_owns ? *b : *a;
  std::vector<StreamCollector*> owner_streams =
      a_owns ? std::vector<StreamCollector*>{&a1, &a2}
             : std::vector<StreamCollector*>{&b1, &b2};
  std::vector<StreamCollector*> standby_streams =
      a_owns ? std::vector<StreamCollector*>{&b1, &b2}
             : std::vector<StreamCollector*>{&a1, &a2};
  EXPECT_EQ(FindTable(standby.Stub().get(), "q").ownership().owner(),
            FindTable(owner.Stub().get(), "q").ownership().owner());

  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 200));
  ASSERT_TRUE(Eventually([&] { return Ids(owner_streams).size() >= 200; },
                         absl::Seconds(20)));
  absl::SleepFor(absl::Milliseconds(500));
  std::multiset<std::string> got = Ids(owner_streams);
  EXPECT_EQ(got.size(), 200u);  // each once
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), Range(1, 200));
  EXPECT_EQ(Ids(standby_streams).size(), 0u);
  // An ack may go to any instance: it is an UPDATE by id.
  const std::set<std::string> first = Range(1, 200);
  std::vector<std::string> ids(first.begin(), first.end());
  int64_t acked = 0;
  auto standby_stub = standby.Stub();
  ASSERT_TRUE(AckIds(standby_stub.get(), "q", ids, &acked).ok());
  EXPECT_EQ(acked, 200);

  owner.Kill();
  const absl::Time killed = absl::Now();
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 201, 300));
  ASSERT_TRUE(Eventually([&] { return Ids(standby_streams).size() >= 100; },
                         absl::Seconds(20)));
  const absl::Duration takeover = absl::Now() - killed;
  absl::SleepFor(absl::Milliseconds(500));
  got = Ids(standby_streams);
  EXPECT_EQ(got.size(), 100u);  // nothing was in flight: no duplicate
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), Range(201, 300));
  EXPECT_EQ(State(standby, "q"), "owner");
  // Information only (timings are measured in tools/, not asserted).
  std::printf("takeover after kill -9: %s\n",
              absl::FormatDuration(takeover).c_str());
}

TEST_F(InstancesTest, AFrozenOwnerSendsNothingOnceItsLeaseIsGone) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=60"));
  std::unique_ptr<Msgqd> a = StartInstance();
  ASSERT_TRUE(a != nullptr);
  ASSERT_TRUE(
      Eventually([&] { return State(*a, "q") == "owner"; }, absl::Seconds(10)));
  std::unique_ptr<Msgqd> b = StartInstance();
  ASSERT_TRUE(b != nullptr);
  auto a_stub = a->Stub();
  auto b_stub = b->Stub();
  StreamCollector on_a(a_stub.get(), "q"), on_b(b_stub.get(), "q");
  ASSERT_TRUE(on_a.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(on_b.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return State(*b, "q") == "standby"; },
                         absl::Seconds(10)));

  ASSERT_EQ(kill(a->pid(), SIGSTOP), 0);
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 50));
  ASSERT_TRUE(
      Eventually([&] { return on_b.row_count() >= 50; }, absl::Seconds(20)));
  ASSERT_EQ(kill(a->pid(), SIGCONT), 0);
  // Awake again, a must not send what b owns now.
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 51, 60));
  ASSERT_TRUE(
      Eventually([&] { return on_b.row_count() >= 60; }, absl::Seconds(20)));
  absl::SleepFor(absl::Seconds(1));
  EXPECT_EQ(on_a.row_count(), 0u);
  EXPECT_EQ(on_b.row_count(), 60u);
  EXPECT_EQ(State(*a, "q"), "standby");
}

TEST_F(InstancesTest, TablesSpreadOverInstancesAndRebalance) {
  for (int i = 0; i < 12; ++i) {
    ASSERT_NO_FATAL_FAILURE(CreateTable("t" + std::to_string(i)));
  }
  std::vector<std::unique_ptr<Msgqd>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(StartInstance());
    ASSERT_TRUE(servers.back() != nullptr);
  }
  auto owned = [&](const Msgqd& s) {
    v1::ListTablesResponse response;
    grpc::ClientContext context;
    if (!s.Stub()
             ->ListTables(&context, v1::ListTablesRequest(), &response)
             .ok()) {
      return -1;
    }
    int n = 0;
    for (const auto& t : response.tables())
      n += t.ownership().state() == "owner";
    return n;
  };
  auto spread = [&](std::vector<int> want) {
    return Eventually(
        [&] {
          for (size_t i = 0; i < want.size(); ++i) {
            if (owned(*servers[i]) != want[i]) return false;
          }
          return true;
        },
        absl::Seconds(30));
  };
  EXPECT_TRUE(spread({4, 4, 4}));
  // A clean stop hands its tables over at once.
  EXPECT_EQ(servers[2]->Terminate(), 0);
  servers.pop_back();
  EXPECT_TRUE(spread({6, 6}));
}

}  // namespace
}  // namespace msgq::testing
