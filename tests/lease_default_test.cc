// Leases on by default (docs/several-instances.md): two msgqd started with the
// same flags share the tables; a MySQL user without the lease grants is refused
// with the GRANT to run; --leases=false detects a second msgqd with GET_LOCK; a
// msgqd killed with -9 and restarted on the same port resumes its leases at
// once (its instance id is host:port).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/instances_fixture.h"
#include "tests/wait_events.h"

namespace msgq::testing {
namespace {

using ::testing::HasSubstr;

// The flags every msgqd here gets: those of a default deployment, with a
// quick schema reload so that tables created by the test load at once.
const std::vector<std::string> kDefaults = {"--databases=msgq",
                                            "--schema_reload_interval=200ms"};

std::vector<std::string> Defaults(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = kDefaults;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// msgqd's default instance id for a --listen of 127.0.0.1:`port`.
std::string DefaultId(int port) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, ":127.0.0.1:", port);
}

// The lines of `log` containing `text`, without their "E2026-... " prefix.
std::vector<std::string> LogLines(const std::string& log,
                                  const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, text)) continue;
    // "L2026-01-02 03:04:05.678 message": the message after the 2nd space.
    size_t at = line.find(' ');
    if (at != absl::string_view::npos) at = line.find(' ', at + 1);
    out.emplace_back(at == absl::string_view::npos ? line
                                                   : line.substr(at + 1));
  }
  return out;
}

class LeaseDefaultTest : public InstancesTest {
 protected:
  std::unique_ptr<Msgqd> Start(std::vector<std::string> extra = {}) {
    auto server = Msgqd::Start(*db_, Defaults(std::move(extra)));
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }
  static v1::Ownership OwnershipOf(const Msgqd& server,
                                   const std::string& table) {
    return FindTable(server.Stub().get(), table).ownership();
  }
};

// (a) Two msgqd with the same default flags: each table has exactly one
// owner, named by its host:port id on both, and 500 messages per table
// inserted with subscribers on both instances arrive once each within the
// ack wait.
TEST_F(LeaseDefaultTest, TwoInstancesWithTheSameFlagsSendEachTableOnce) {
  const std::vector<std::string> tables = {"q1", "q2"};
  for (const std::string& t : tables) {
    ASSERT_NO_FATAL_FAILURE(
        CreateTable(t, "vt_ack_wait=300,vt_poller_interval=0.5"));
  }
  std::unique_ptr<Msgqd> a = Start();
  std::unique_ptr<Msgqd> b = Start();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  const std::set<std::string> ids = {DefaultId(a->port()),
                                     DefaultId(b->port())};
  for (const std::string& t : tables) {
    ASSERT_TRUE(Eventually(
        [&] {
          const v1::Ownership oa = OwnershipOf(*a, t), ob = OwnershipOf(*b, t);
          const std::set<std::string> states = {oa.state(), ob.state()};
          return states == std::set<std::string>{"owner", "standby"} &&
                 oa.owner() == ob.owner() && ids.contains(oa.owner());
        },
        absl::Seconds(20)))
        << t << ": " << OwnershipOf(*a, t).DebugString() << " / "
        << OwnershipOf(*b, t).DebugString();
  }
  // Two tables, two instances: one each once b has joined (a took both
  // first and hands one over).
  ASSERT_TRUE(Eventually([&] { return Owned(*a) == 1 && Owned(*b) == 1; },
                         absl::Seconds(20)));
  auto a_stub = a->Stub();
  auto b_stub = b->Stub();
  std::vector<std::unique_ptr<StreamCollector>> streams;
  for (const std::string& t : tables) {
    for (v1::Messaging::Stub* stub : {a_stub.get(), b_stub.get()}) {
      for (int i = 0; i < 2; ++i) {
        streams.push_back(std::make_unique<StreamCollector>(stub, t));
        ASSERT_TRUE(streams.back()->WaitForFields(absl::Seconds(10)));
      }
    }
  }
  for (const std::string& t : tables) {
    ASSERT_NO_FATAL_FAILURE(InsertRange(t, 1, 500));
  }
  auto received = [&](const std::string& table) {
    std::multiset<std::string> out;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (tables[i / 4] != table) continue;
      for (const std::string& id : streams[i]->ids()) out.insert(id);
    }
    return out;
  };
  for (const std::string& t : tables) {
    ASSERT_TRUE(Eventually([&] { return received(t).size() >= 500; },
                           absl::Seconds(30)))
        << t << ": " << received(t).size();
  }
  // A duplicate would come from a read of the standby or a second read of
  // the owner's: three more polls of each table by its owner, and none by
  // its standby.
  for (const std::string& t : tables) {
    const bool a_owns = OwnershipOf(*a, t).state() == "owner";
    v1::Messaging::Stub* owner = a_owns ? a_stub.get() : b_stub.get();
    v1::Messaging::Stub* standby = a_owns ? b_stub.get() : a_stub.get();
    const int64_t standby_polls = Polls(standby, t);
    ASSERT_TRUE(WaitForPolls(owner, t, Polls(owner, t) + 3, absl::Seconds(20)))
        << t;
    EXPECT_EQ(Polls(standby, t), standby_polls) << t;
  }
  for (const std::string& t : tables) {
    const std::multiset<std::string> got = received(t);
    EXPECT_EQ(got.size(), 500u) << t;
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), Range(1, 500))
        << t;
    // Only the owner's subscribers received anything.
    const bool a_owns = OwnershipOf(*a, t).state() == "owner";
    const size_t first = (t == "q1" ? 0 : 4) + (a_owns ? 2 : 0);
    EXPECT_EQ(streams[first]->row_count() + streams[first + 1]->row_count(), 0u)
        << t;
  }
  // One heartbeat row each, under the default ids.
  EXPECT_EQ(db_->Scalar("SELECT GROUP_CONCAT(instance ORDER BY instance) "
                        "FROM msgq.msgq_instances"),
            absl::StrCat(*ids.begin(), ",", *ids.rbegin()));
}

// (b) A MySQL user without grants for the lease tables: msgqd exits 2 with
// one error line naming the GRANTs to run and --leases=false. After those
// GRANTs the same msgqd starts and sends.
TEST_F(LeaseDefaultTest, MissingLeaseGrantsRefuseToStartWithTheGrant) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'app'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT SELECT, UPDATE, DELETE ON msgq.* TO 'app'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT REPLICATION SLAVE ON *.* TO 'app'@'localhost'"));
  std::string log;
  EXPECT_EQ(Msgqd::RunUntilExit(*db_, Defaults({"--mysql_user=app"}),
                                absl::Seconds(30), &log),
            2)
      << log;
  const std::string grants =
      "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON `msgq`.msgq_leases TO "
      "'app'@'localhost'; GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON "
      "`msgq`.msgq_instances TO 'app'@'localhost';";
  EXPECT_EQ(
      LogLines(log, "msgqd shares"),
      std::vector<std::string>{absl::StrCat(
          "msgqd shares its tables with other msgqd by lease rows (--leases, "
          "the default), but MySQL refuses them: query failed: MySQL error "
          "1142: CREATE command denied to user 'app'@'localhost' for table "
          "`msgq`.`msgq_leases`. Either grant them: ",
          grants,
          " or, for a deployment that runs a single msgqd, start it with "
          "--leases=false")});
  // That is the only error, and msgqd never listened.
  int errors = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    errors += absl::StartsWith(line, "E");
  }
  EXPECT_EQ(errors, 1) << log;
  EXPECT_THAT(log, ::testing::Not(HasSubstr("msgqd listening on")));

  for (absl::string_view grant : absl::StrSplit(grants, "; ")) {
    ASSERT_NO_FATAL_FAILURE(Exec(std::string(absl::StripSuffix(grant, ";"))));
  }
  std::unique_ptr<Msgqd> server = Start({"--mysql_user=app"});
  ASSERT_TRUE(server != nullptr);
  ASSERT_TRUE(Eventually([&] { return State(*server, "q") == "owner"; },
                         absl::Seconds(20)))
      << server->Log();
  auto stub = server->Stub();
  StreamCollector s(stub.get(), "q");
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(20)));
  EXPECT_THAT(s.ids(), ::testing::ElementsAre("1", "2", "3"));
}

// A MySQL that cannot be reached at start is not a refusal: msgqd listens
// and keeps trying, as without leases.
TEST_F(LeaseDefaultTest, AnUnreachableMysqlIsNotARefusal) {
  std::unique_ptr<Msgqd> server =
      Start({"--mysql_socket=/nonexistent/mysqld.sock"});
  ASSERT_TRUE(server != nullptr);
  EXPECT_THAT(server->Log(), ::testing::Not(HasSubstr("msgqd shares")));
  EXPECT_EQ(server->Terminate(), 0);
}

// (c) --leases=false twice: the first sends ("off"); the second does not
// ("standby", naming the first's MySQL session) and says so in one log
// line; once the first is killed with -9 the second takes over.
TEST_F(LeaseDefaultTest, WithoutLeasesASecondInstanceStandsByAndTakesOver) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=300,vt_poller_interval=0.5"));
  std::unique_ptr<Msgqd> a = Start({"--leases=false"});
  ASSERT_TRUE(a != nullptr);
  ASSERT_TRUE(
      Eventually([&] { return State(*a, "q") == "off"; }, absl::Seconds(10)));
  std::unique_ptr<Msgqd> b = Start({"--leases=false"});
  ASSERT_TRUE(b != nullptr);
  const std::string holder = db_->Scalar("SELECT IS_USED_LOCK('msgq:msgq')");
  const std::string host = db_->Scalar(absl::StrCat(
      "SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = ", holder));
  const std::string named =
      absl::StrCat("MySQL connection ", holder, " from ", host);
  const std::string reason = absl::StrCat(
      "another msgqd holds GET_LOCK('msgq:msgq') (", named,
      "): this msgqd does not send the tables of `msgq` until that one is "
      "gone; to share the tables among several msgqd, start each with "
      "--leases");
  ASSERT_TRUE(Eventually(
      [&] {
        return State(*b, "q") == "standby" &&
               !OwnershipOf(*b, "q").owner().empty();
      },
      absl::Seconds(10)));
  const v1::Ownership standby = OwnershipOf(*b, "q");
  EXPECT_EQ(standby.state(), "standby");
  EXPECT_EQ(standby.owner(), named);
  EXPECT_EQ(standby.error(), reason);
  const v1::Ownership sender = OwnershipOf(*a, "q");
  EXPECT_EQ(sender.state(), "off");
  EXPECT_EQ(sender.owner(), "");
  EXPECT_EQ(sender.error(), "");
  EXPECT_EQ(LogLines(b->Log(), "instance lock: another msgqd"),
            std::vector<std::string>{absl::StrCat("instance lock: ", reason)});

  auto a_stub = a->Stub();
  auto b_stub = b->Stub();
  StreamCollector from_a(a_stub.get(), "q"), from_b(b_stub.get(), "q");
  ASSERT_TRUE(from_a.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(from_b.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 20));
  ASSERT_TRUE(from_a.WaitForRows(20, absl::Seconds(20)));
  // Their postpones committed: a row sent by a is not due for b.
  ASSERT_TRUE(Eventually(
      [&] {
        return db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch > 0") ==
               "20";
      },
      absl::Seconds(10)));
  EXPECT_EQ(from_b.row_count(), 0u);

  a->Kill();
  ASSERT_TRUE(
      Eventually([&] { return State(*b, "q") == "off"; }, absl::Seconds(10)))
      << b->Log();
  const v1::Ownership taken = OwnershipOf(*b, "q");
  EXPECT_EQ(taken.owner(), "");
  EXPECT_EQ(taken.error(), "");
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 21, 40));
  ASSERT_TRUE(from_b.WaitForRows(20, absl::Seconds(20)));
  // A second send would come from a later read.
  ASSERT_TRUE(WaitForPolls(b_stub.get(), "q", Polls(b_stub.get(), "q") + 3,
                           absl::Seconds(20)));
  std::vector<std::string> got = from_b.ids();
  std::sort(got.begin(), got.end(),
            [](const std::string& x, const std::string& y) {
              return std::stoi(x) < std::stoi(y);
            });
  const std::set<std::string> want = Range(21, 40);
  EXPECT_EQ(got, std::vector<std::string>(want.begin(), want.end()));
  EXPECT_EQ(from_a.row_count(), 20u);
}

// (d) kill -9, then a msgqd with the same flags on the same port: its id is
// the same, so it finds the lease rows under it and sends at once, well
// before the old lease (5 s by default) could have run out: the lease row
// is the old one (same `since`) and the heartbeat row is reused.
TEST_F(LeaseDefaultTest, KilledAndRestartedOnTheSamePortResumesAtOnce) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=300"));
  std::unique_ptr<Msgqd> a = Start();
  ASSERT_TRUE(a != nullptr);
  const int port = a->port();
  ASSERT_TRUE(
      Eventually([&] { return State(*a, "q") == "owner"; }, absl::Seconds(10)));
  const std::string since =
      db_->Scalar("SELECT since FROM msgq.msgq_leases WHERE name = 'msgq.q'");
  EXPECT_EQ(OwnershipOf(*a, "q").owner(), DefaultId(port));

  a->Kill();
  const absl::Time killed = absl::Now();
  std::unique_ptr<Msgqd> again =
      Start({absl::StrCat("--listen=127.0.0.1:", port)});
  ASSERT_TRUE(again != nullptr);
  ASSERT_EQ(again->port(), port);
  // (Also gets the test's gRPC connection past the killed process's.)
  ASSERT_TRUE(Eventually([&] { return State(*again, "q") == "owner"; },
                         absl::Seconds(10)));
  auto stub = again->Stub();
  StreamCollector s(stub.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  const absl::Duration resumed = absl::Now() - killed;
  // A correctness bound, not a speed one: it did not wait for expiry.
  EXPECT_LT(resumed, absl::Seconds(5));
  const v1::Ownership own = OwnershipOf(*again, "q");
  EXPECT_EQ(own.state(), "owner");
  EXPECT_EQ(own.owner(), DefaultId(port));
  EXPECT_EQ(
      db_->Scalar("SELECT since FROM msgq.msgq_leases WHERE name = 'msgq.q'"),
      since);
  EXPECT_EQ(db_->Scalar("SELECT GROUP_CONCAT(instance) FROM "
                        "msgq.msgq_instances"),
            DefaultId(port));
  EXPECT_THAT(again->Log(), ::testing::Not(HasSubstr("leases: took")));
  std::printf("resumed %.3f s after the kill\n",
              absl::ToDoubleSeconds(resumed));
}

// Two msgqd cannot share one gRPC port (no SO_REUSEPORT): the second exits
// 1 before it touches MySQL.
TEST_F(LeaseDefaultTest, ASecondInstanceOnTheSamePortExits) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  std::unique_ptr<Msgqd> a = Start();
  ASSERT_TRUE(a != nullptr);
  ASSERT_TRUE(
      Eventually([&] { return State(*a, "q") == "owner"; }, absl::Seconds(10)));
  std::string log;
  EXPECT_EQ(
      Msgqd::RunUntilExit(
          *db_, Defaults({absl::StrCat("--listen=127.0.0.1:", a->port())}),
          absl::Seconds(20), &log),
      1)
      << log;
  EXPECT_EQ(LogLines(log, "is in use"),
            std::vector<std::string>{absl::StrCat(
                "port ", a->port(),
                " (flag --listen) is in use (127.0.0.1:", a->port(),
                "): stop what listens there or give --listen "
                "another port")});
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.msgq_instances"), "1");
}

// Takeover times with the default flags (5 s leases), for
// docs/several-instances.md; prints, asserts nothing about time. Run with
//   build/tests/lease_default_test --gtest_also_run_disabled_tests \
//     --gtest_filter='*TakeoverTimes'
// 20 kills of the owner with a standby running (the killed one restarted on
// its port as the next standby), then 20 kills of a lone msgqd restarted on
// its port: the time from the kill to the first message inserted after it.
TEST_F(LeaseDefaultTest, DISABLED_TakeoverTimes) {
  constexpr int kRounds = 20;
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=300"));
  auto summary = [](const char* what, std::vector<double> t) {
    std::sort(t.begin(), t.end());
    std::printf("%s: n=%zu median %.2f s, max %.2f s\n", what, t.size(),
                t[t.size() / 2], t.back());
  };
  int next_id = 1;
  // Kills `victim`, inserts one row, and returns the seconds until `stream`
  // got it (-1 on timeout).
  auto kill_and_time = [&](Msgqd& victim, StreamCollector& stream) {
    const size_t before = stream.row_count();
    victim.Kill();
    const absl::Time killed = absl::Now();
    InsertRange("q", next_id, next_id);
    ++next_id;
    if (!stream.WaitForRows(before + 1, absl::Seconds(30))) return -1.0;
    return absl::ToDoubleSeconds(absl::Now() - killed);
  };

  std::vector<double> standby;
  std::unique_ptr<Msgqd> a = Start();
  std::unique_ptr<Msgqd> b = Start();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(Eventually(
        [&] {
          return (State(*a, "q") == "owner") != (State(*b, "q") == "owner");
        },
        absl::Seconds(30)));
    std::unique_ptr<Msgqd>& owner = State(*a, "q") == "owner" ? a : b;
    std::unique_ptr<Msgqd>& other = owner == a ? b : a;
    auto stub = other->Stub();
    StreamCollector s(stub.get(), "q");
    ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
    const int port = owner->port();
    const double t = kill_and_time(*owner, s);
    ASSERT_GE(t, 0) << other->Log();
    std::printf("standby takeover %d: %.2f s\n", i, t);
    standby.push_back(t);
    owner = Start({absl::StrCat("--listen=127.0.0.1:", port)});
    ASSERT_TRUE(owner != nullptr);
  }
  b.reset();
  std::vector<double> restart;
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(Eventually([&] { return State(*a, "q") == "owner"; },
                           absl::Seconds(30)));
    const int port = a->port();
    a->Kill();
    const absl::Time killed = absl::Now();
    a = Start({absl::StrCat("--listen=127.0.0.1:", port)});
    ASSERT_TRUE(a != nullptr);
    ASSERT_TRUE(Eventually([&] { return State(*a, "q") == "owner"; },
                           absl::Seconds(30)));
    auto stub = a->Stub();
    StreamCollector s(stub.get(), "q");
    ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
    InsertRange("q", next_id, next_id);
    ++next_id;
    ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(30))) << a->Log();
    restart.push_back(absl::ToDoubleSeconds(absl::Now() - killed));
    std::printf("restart %d: %.2f s\n", i, restart.back());
  }
  summary("owner killed, standby takes over", standby);
  summary("lone msgqd killed, restarted on its port", restart);
}

}  // namespace
}  // namespace msgq::testing
