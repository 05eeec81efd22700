// Several msgqd on one MariaDB with --leases (docs/several-instances.md): each
// table is sent by one instance only; a standby takes over when the owner dies
// or freezes; tables spread over the instances.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/instances_fixture.h"
#include "tests/log_wait.h"

namespace msgq::testing {
namespace {

// Ids received by `collectors`, with their count (duplicates count).
std::multiset<std::string> Ids(
    const std::vector<StreamCollector*>& collectors) {
  std::multiset<std::string> out;
  for (StreamCollector* c : collectors) {
    for (const std::string& id : c->ids()) out.insert(id);
  }
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
  // "standby" is also what an instance says before its first lease round,
  // when it knows no owner yet: wait until both name the same one.
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string sa = State(*a, "q"), sb = State(*b, "q");
        const std::string oa = FindTable(a_stub.get(), "q").ownership().owner();
        const std::string ob = FindTable(b_stub.get(), "q").ownership().owner();
        return ((sa == "owner" && sb == "standby") ||
                (sa == "standby" && sb == "owner")) &&
               !oa.empty() && oa == ob;
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
  // The standby says which instance serves the table; the owner does not.
  const std::string owner_id =
      FindTable(owner.Stub().get(), "q").ownership().owner();
  EXPECT_TRUE(LogShows(standby,
                       "leases: `msgq.q` is served by " + owner_id +
                           "; this msgqd stands by for it",
                       absl::Seconds(5)))
      << standby.Log();
  EXPECT_EQ(owner.Log().find("stands by"), std::string::npos) << owner.Log();

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

// A stream opened on the standby is served (idle until the takeover) and
// told, in its initial metadata, which instance sends the table; `msgq
// tail` prints that, then the message the standby sends once it took over.
TEST_F(InstancesTest, AStreamOnTheStandbyIsToldWhichInstanceSendsTheTable) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  std::unique_ptr<Msgqd> a = StartInstance();
  std::unique_ptr<Msgqd> b = StartInstance();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  auto a_stub = a->Stub();
  auto b_stub = b->Stub();
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string sa = State(*a, "q"), sb = State(*b, "q");
        const std::string oa = FindTable(a_stub.get(), "q").ownership().owner();
        const std::string ob = FindTable(b_stub.get(), "q").ownership().owner();
        return ((sa == "owner" && sb == "standby") ||
                (sa == "standby" && sb == "owner")) &&
               !oa.empty() && oa == ob;
      },
      absl::Seconds(10)));
  const bool a_owns = State(*a, "q") == "owner";
  Msgqd& owner = a_owns ? *a : *b;
  Msgqd& standby = a_owns ? *b : *a;
  const std::string owner_id =
      FindTable(owner.Stub().get(), "q").ownership().owner();
  // An instance's id is HOST:ADDRESS, the address it listens on
  // (--instance_id unset).
  ASSERT_TRUE(absl::EndsWith(owner_id, owner.address())) << owner_id;
  const std::string standby_id =
      absl::StrCat(owner_id.substr(0, owner_id.size() - owner.address().size()),
                   standby.address());
  const std::string note = absl::StrCat(
      "this msgqd (", standby_id, ") stands by for `msgq`.`q`: instance ",
      owner_id,
      " sends it; this stream receives its messages only once this msgqd "
      "takes the table over (subscribe to every instance: msgq "
      "--server=A,B)");

  // The initial metadata: the note on the standby, nothing on the owner.
  auto metadata = [](Msgqd& server) {
    auto stub = server.Stub();
    grpc::ClientContext context;
    v1::MessageStreamRequest request;
    request.set_name("q");
    auto reader = stub->MessageStream(&context, request);
    v1::MessageStreamResponse fields;
    std::string value = "(no first response)";
    if (reader->Read(&fields)) {
      const auto& md = context.GetServerInitialMetadata();
      auto it = md.find("msgq-standby");
      value = it == md.end()
                  ? ""
                  : std::string(it->second.data(), it->second.size());
    }
    context.TryCancel();
    (void)reader->Finish();
    return value;
  };
  EXPECT_EQ(metadata(standby), note);
  EXPECT_EQ(metadata(owner), "");

  // `msgq tail --count 1` on the standby alone: the note on stderr, then
  // the message once the owner is gone and the standby took the table.
  char err_path[] = "/tmp/msgq-standby-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string command =
      absl::StrCat("env -u MSGQ_SERVER timeout 60 ", MSGQ_CLI_PATH,
                   " --server=", standby.address(),
                   " tail --count 1 --ack q </dev/null 2>", err_path);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  auto err = [&] {
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_TRUE(Eventually([&] { return !err().empty(); }, absl::Seconds(10)));
  EXPECT_EQ(err(), absl::StrCat("msgq tail: ", note, "\n"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  owner.Kill();
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  unlink(err_path);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(out, "id=1 message=\"{\\\"n\\\": 1}\"\n");
  EXPECT_EQ(State(standby, "q"), "owner");
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

  ASSERT_TRUE(StopAndWait(a->pid()));
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

// 12 tables over three instances: 4/4/4; a clean stop hands its tables
// over at once (6/6); started again, an instance takes its share back
// (4/4/4) and every message inserted across the rebalance is sent once.
TEST_F(InstancesTest, TablesSpreadOverInstancesAndRebalance) {
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {
    names.push_back("t" + std::to_string(i));
    ASSERT_NO_FATAL_FAILURE(CreateTable(names.back()));
  }
  std::vector<std::unique_ptr<Msgqd>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(StartInstance());
    ASSERT_TRUE(servers.back() != nullptr);
  }
  auto spread = [&](std::vector<int> want) {
    std::vector<int> got;
    const bool ok = Eventually(
        [&] {
          got.clear();
          for (const auto& s : servers) got.push_back(Owned(*s));
          return got == want;
        },
        absl::Seconds(30));
    EXPECT_EQ(got, want);
    return ok;
  };
  ASSERT_TRUE(spread({4, 4, 4}));
  // A clean stop hands its tables over at once.
  EXPECT_EQ(servers[2]->Terminate(), 0);
  servers.pop_back();
  ASSERT_TRUE(spread({6, 6}));

  // A subscriber on every instance for every table, acking nothing (the
  // 30 s ack wait is longer than the test: a second send is a duplicate).
  std::vector<std::unique_ptr<v1::Messaging::Stub>> stubs;
  std::vector<std::unique_ptr<StreamCollector>> streams;
  std::map<std::string, std::vector<StreamCollector*>> by_table;
  auto subscribe = [&](const Msgqd& server) {
    stubs.push_back(server.Stub());
    for (const std::string& name : names) {
      streams.push_back(
          std::make_unique<StreamCollector>(stubs.back().get(), name));
      by_table[name].push_back(streams.back().get());
      ASSERT_TRUE(streams.back()->WaitForFields(absl::Seconds(10)));
    }
  };
  ASSERT_NO_FATAL_FAILURE(subscribe(*servers[0]));
  ASSERT_NO_FATAL_FAILURE(subscribe(*servers[1]));
  servers.push_back(StartInstance());
  ASSERT_TRUE(servers.back() != nullptr);
  ASSERT_NO_FATAL_FAILURE(subscribe(*servers[2]));
  // Inserted while the tables move.
  for (const std::string& name : names) {
    ASSERT_NO_FATAL_FAILURE(InsertRange(name, 1, 5));
  }
  EXPECT_TRUE(spread({4, 4, 4}));
  for (const std::string& name : names) {
    ASSERT_NO_FATAL_FAILURE(InsertRange(name, 6, 10));
  }
  EXPECT_TRUE(Eventually(
      [&] {
        for (const std::string& name : names) {
          if (Ids(by_table[name]).size() < 10) return false;
        }
        return true;
      },
      absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(500));  // a late second send shows
  for (const std::string& name : names) {
    const std::multiset<std::string> got = Ids(by_table[name]);
    EXPECT_EQ(got.size(), 10u) << name;
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), Range(1, 10))
        << name;
  }
}

}  // namespace
}  // namespace msgq::testing
