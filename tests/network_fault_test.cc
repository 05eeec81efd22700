// Network faults: links that lose every packet silently (no FIN, no RST),
// made with network namespaces of the test's own (tests/netns_fixture.h).
// Root only; skipped otherwise.
//
//   MysqlLinkDropped   MariaDB in a namespace, msgqd outside: msgqd stops
//                      sending before its lease can end, every MySQL
//                      connection it had notices within the documented
//                      bound (docs/operations.md#network-faults), and once
//                      the link is back nothing is lost and nothing sent
//                      twice inside its ack wait.
//   SilentSubscriber   one subscriber in a namespace, another outside: the
//                      silent one's slot is freed by msgqd's gRPC keepalive,
//                      its in-flight messages go to the other after their
//                      ack wait, and the other keeps receiving meanwhile.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/instances_fixture.h"
#include "tests/netns_fixture.h"
#include "tools/launch/child_process.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/owned_dir.h"

#ifndef MSGQ_MSGQD_PATH
#error "MSGQ_MSGQD_PATH must be defined"
#endif
#ifndef MSGQ_NETNS_SUBSCRIBER_PATH
#error "MSGQ_NETNS_SUBSCRIBER_PATH must be defined"
#endif

namespace msgq::testing {
namespace {

// The bounds docs/operations.md#network-faults promises, with the
// settings the tests run with.
constexpr absl::Duration kLinkTimeout = absl::Seconds(10);    // MysqlOptions
constexpr absl::Duration kDumpDeadAfter = absl::Seconds(10);  // binlog
constexpr absl::Duration kKeepaliveTime = absl::Seconds(2);
constexpr absl::Duration kKeepaliveTimeout = absl::Seconds(2);
// What a loaded machine may add to a bound: a thread's wake-up, a
// ListTables round trip, the 20 ms poll of Eventually.
constexpr absl::Duration kSlack = absl::Seconds(5);

std::string Ms(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Milliseconds(d), " ms");
}

// msgqd started directly (its MariaDB is not a PrivateMariaDb of
// test_env's): the log in a directory of its own.
struct Server {
  std::unique_ptr<launch::OwnedDir> dir;
  std::unique_ptr<launch::MsgqdProcess> process;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Messaging::Stub> stub;

  ~Server() {
    stub.reset();
    if (process != nullptr) process->Stop(absl::Seconds(5));
  }
};

std::unique_ptr<Server> StartServer(const NetnsMariaDb& db,
                                    std::vector<std::string> args) {
  auto server = std::make_unique<Server>();
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
      launch::OwnedDir::Create(absl::StrCat(kTempPrefix, "nfsrv"));
  EXPECT_TRUE(dir.ok()) << dir.status();
  if (!dir.ok()) return nullptr;
  server->dir = *std::move(dir);
  launch::MsgqdProcess::Options o;
  o.path = MSGQ_MSGQD_PATH;
  o.mysql_socket = db.socket();  // replaced by MsgqdArgs()
  for (const std::string& a : db.MsgqdArgs()) o.args.push_back(a);
  for (const std::string& a : args) o.args.push_back(a);
  o.log_path = server->dir->path() + "/msgqd.log";
  o.start_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<launch::MsgqdProcess>> process =
      launch::MsgqdProcess::Start(o);
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return nullptr;
  server->process = *std::move(process);
  server->channel = grpc::CreateChannel(server->process->address(),
                                        grpc::InsecureChannelCredentials());
  server->stub = v1::Messaging::NewStub(server->channel);
  return server;
}

// ListTables' view: q's entry and the binlog follower's.
struct View {
  bool answered = false;
  v1::TableStatus q;
  v1::BinlogStatus binlog;
};

View ListQ(v1::Messaging::Stub* stub) {
  View view;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  v1::ListTablesResponse response;
  if (!stub->ListTables(&context, v1::ListTablesRequest(), &response).ok()) {
    return view;
  }
  view.answered = true;
  view.binlog = response.binlog();
  for (const v1::TableStatus& t : response.tables()) {
    if (t.keyspace() == "msgq" && t.name() == "q") view.q = t;
  }
  return view;
}

// Waits for `predicate`; returns how long it took, or InfiniteDuration.
template <typename F>
absl::Duration TimeUntil(F predicate, absl::Time since,
                         absl::Duration timeout) {
  if (!Eventually(predicate, timeout)) return absl::InfiniteDuration();
  return absl::Now() - since;
}

std::string Insert(int from, int to) {
  std::string sql = "INSERT INTO msgq.q (id, message) VALUES ";
  for (int i = from; i <= to; ++i) {
    absl::StrAppend(&sql, i > from ? "," : "", "(", i, ", '{\"n\": ", i, "}')");
  }
  return sql;
}

class NetworkFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!NetnsLink::Supported(&why)) GTEST_SKIP() << why;
    absl::StatusOr<std::unique_ptr<NetnsLink>> link = NetnsLink::Create();
    ASSERT_TRUE(link.ok()) << link.status();
    link_ = *std::move(link);
  }

  std::unique_ptr<NetnsLink> link_;
};

// MariaDB in the namespace, msgqd (--leases, 2 s lease) outside reaching
// it over the link only; two acking subscribers. A rate limit keeps
// msgqd sending when the link drops, and goes on until its grant ends.
TEST_F(NetworkFaultTest, MysqlLinkDropped) {
  absl::StatusOr<std::unique_ptr<NetnsMariaDb>> db_or =
      NetnsMariaDb::Start(*link_);
  ASSERT_TRUE(db_or.ok()) << db_or.status();
  NetnsMariaDb& db = **db_or;
  ASSERT_TRUE(db.Exec("CREATE DATABASE msgq").ok());
  // The ack wait outlasts the test: any second delivery is an early one.
  ASSERT_TRUE(db.Exec("USE msgq").ok());
  ASSERT_TRUE(
      db.Exec(MessageTableDdl("q", MessageComment("vt_ack_wait=120,"
                                                  "vt_poller_interval=2,"
                                                  "msgq_rate_limit=100,"
                                                  "msgq_rate_burst=1")))
          .ok());
  std::unique_ptr<Server> server = StartServer(
      db, {"--databases=msgq", "--schema_reload_interval=200ms", "--leases",
           absl::StrCat("--lease_duration=", absl::FormatDuration(kLease)),
           "--instance_id=a",
           // Subscribers whose acks hang keep receiving: msgqd goes on
           // sending after the drop until its grant runs out.
           "--max_batches_per_subscriber=100"});
  ASSERT_TRUE(server != nullptr);
  v1::Messaging::Stub* stub = server->stub.get();
  ASSERT_TRUE(
      Eventually([&] { return ListQ(stub).q.ownership().state() == "owner"; },
                 absl::Seconds(30)));
  std::vector<std::unique_ptr<AckingSubscriber>> subscribers;
  for (int i = 0; i < 2; ++i) {
    subscribers.push_back(
        std::make_unique<AckingSubscriber>(stub, nullptr, "q"));
    ASSERT_TRUE(subscribers.back()->WaitForFields(absl::Seconds(10)));
  }
  std::vector<AckingSubscriber*> all = {subscribers[0].get(),
                                        subscribers[1].get()};
  ASSERT_TRUE(Eventually([&] { return ListQ(stub).binlog.streaming(); },
                         absl::Seconds(20)));

  // 1..100 delivered and acked: the pool, the lease keeper and the dump
  // all have connections open.
  ASSERT_TRUE(db.Exec(Insert(1, 100)).ok());
  ASSERT_TRUE(Eventually([&] { return Received(all).size() >= 100; },
                         absl::Seconds(30)));
  // 101..400 leave at 100 a second: the link drops while msgqd sends.
  ASSERT_TRUE(db.Exec(Insert(101, 400)).ok());
  ASSERT_TRUE(Eventually([&] { return Received(all).size() >= 150; },
                         absl::Seconds(30)));
  const std::set<int> before = EstablishedTo(link_->inner_address(), db.port());
  ASSERT_FALSE(before.empty());
  const absl::Time dropped = absl::Now();
  ASSERT_TRUE(link_->Drop().ok());
  // Inserted during the outage, over the Unix socket.
  ASSERT_TRUE(db.Exec(Insert(401, 500)).ok());

  // One watch from the drop on: ListTables (the lease, the dump) and this
  // namespace's TCP table (every connection open at the drop: pool, lease
  // keeper, dump), each noted when it first shows msgqd noticed.
  absl::Duration not_owner = absl::InfiniteDuration();
  absl::Duration dump_noticed = absl::InfiniteDuration();
  std::map<int, absl::Duration> closed_after;  // by local port
  std::set<int> left = before;
  Eventually(
      [&] {
        const absl::Duration since = absl::Now() - dropped;
        const View v = ListQ(stub);
        if (v.answered && v.q.ownership().state() != "owner" &&
            not_owner == absl::InfiniteDuration()) {
          not_owner = since;
        }
        if (v.answered && !v.binlog.streaming() &&
            dump_noticed == absl::InfiniteDuration()) {
          dump_noticed = since;
        }
        const std::set<int> now =
            EstablishedTo(link_->inner_address(), db.port());
        left.clear();
        std::set_intersection(before.begin(), before.end(), now.begin(),
                              now.end(), std::inserter(left, left.begin()));
        for (int port : before) {
          if (!left.contains(port) && !closed_after.contains(port)) {
            closed_after[port] = since;
          }
        }
        return left.empty() && not_owner != absl::InfiniteDuration() &&
               dump_noticed != absl::InfiniteDuration();
      },
      kLinkTimeout + kSlack);
  absl::Duration all_closed = absl::ZeroDuration();
  for (const auto& [port, after] : closed_after) {
    all_closed = std::max(all_closed, after);
  }
  // The grant runs out a quarter lease before the lease could, and the
  // keeper reports "unknown" once a renewal failed (its read timeout is
  // the lease).
  EXPECT_LT(not_owner, kLease + kSlack);
  EXPECT_LT(dump_noticed, kDumpDeadAfter + kSlack);
  EXPECT_TRUE(left.empty()) << left.size() << " of " << before.size()
                            << " MySQL connections still established "
                            << Ms(absl::Now() - dropped) << " after the drop";
  const View during = ListQ(stub);
  EXPECT_TRUE(during.answered);
  EXPECT_NE(during.q.ownership().state(), "owner");
  EXPECT_FALSE(during.binlog.streaming());
  EXPECT_NE(during.binlog.last_error(), "");

  const absl::Time restored = absl::Now();
  ASSERT_TRUE(link_->Restore().ok());
  const absl::Duration owner_again =
      TimeUntil([&] { return ListQ(stub).q.ownership().state() == "owner"; },
                restored, absl::Seconds(60));
  ASSERT_LT(owner_again, absl::Seconds(60));
  const std::set<std::string> expected = Range(1, 500);
  std::set<std::string> missing;
  ASSERT_TRUE(Eventually(
      [&] {
        missing.clear();
        const std::multiset<std::string> got = Received(all);
        for (const std::string& id : expected) {
          if (!got.contains(id)) missing.insert(id);
        }
        return missing.empty();
      },
      absl::Seconds(60)))
      << missing.size() << " ids never arrived, e.g. " << *missing.begin();
  ASSERT_TRUE(Eventually(
      [&] {
        return db.Scalar(
                   "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL") ==
               "0";
      },
      absl::Seconds(60)));
  EXPECT_TRUE(Eventually([&] { return ListQ(stub).binlog.streaming(); },
                         absl::Seconds(30)));

  // Nothing sent early: with a 120 s ack wait, every id arrived once.
  std::map<std::string, int> times;
  absl::Time last_before_restore = absl::InfinitePast();
  for (AckingSubscriber* s : all) {
    for (const AckingSubscriber::Arrival& a : s->arrivals()) {
      ++times[a.id];
      if (a.at < restored) {
        last_before_restore = std::max(last_before_restore, a.at);
      }
    }
  }
  for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << "id " << id;
  EXPECT_EQ(times.size(), 500u);
  // Fencing: msgqd sent until its grant ran out (3/4 lease after its last
  // renewal, which began before the drop); the quarter lease is the margin
  // for the subscribers' stamps.
  EXPECT_LE(last_before_restore, dropped + kLease)
      << "sent " << Ms(last_before_restore - dropped) << " after the drop";
  // It did send after the drop (else the checks above prove little): rows
  // whose postpones could not reach MySQL, and still arrived only once.
  EXPECT_GT(last_before_restore, dropped);
  std::vector<std::string> closings;
  for (const auto& [port, after] : closed_after) closings.push_back(Ms(after));
  std::printf(
      "MySQL link dropped: not owner after %s, dump down after %s, all %zu "
      "connections closed after %s (each: %s), last arrival %s after the "
      "drop; owner again %s after the restore\n",
      Ms(not_owner).c_str(), Ms(dump_noticed).c_str(), before.size(),
      Ms(all_closed).c_str(), absl::StrJoin(closings, ", ").c_str(),
      Ms(last_before_restore - dropped).c_str(), Ms(owner_again).c_str());
  subscribers.clear();
  EXPECT_EQ(server->process->Stop(absl::Seconds(10)), 0);
}

// MysqlOptions::link_timeout on connections of the test's own over the
// link: a statement that runs longer than it on a live link is not cut (the
// kernel answers the probes); once the link drops, an idle connection and
// one waiting for a long statement are both closed within it, though their
// read timeout is a minute away.
TEST_F(NetworkFaultTest, MysqlConnectionsNoticeWithinTheLinkTimeout) {
  absl::StatusOr<std::unique_ptr<NetnsMariaDb>> db =
      NetnsMariaDb::Start(*link_);
  ASSERT_TRUE(db.ok()) << db.status();
  MysqlOptions o;
  o.host = link_->inner_address();
  o.port = (*db)->port();
  o.io_timeout = absl::Seconds(60);
  o.link_timeout = absl::Seconds(3);
  auto idle = MysqlConnection::Connect(o);
  ASSERT_TRUE(idle.ok()) << idle.status();
  auto busy = MysqlConnection::Connect(o);
  ASSERT_TRUE(busy.ok()) << busy.status();
  absl::StatusOr<QueryResult> slept = (*busy)->Query("SELECT SLEEP(5)");
  ASSERT_TRUE(slept.ok()) << slept.status();
  EXPECT_EQ(slept->rows.at(0).at(0), "0");  // not interrupted

  absl::StatusOr<QueryResult> long_query = absl::UnknownError("not yet");
  absl::Time answered;
  std::thread waiter([&] {
    long_query = (*busy)->Query("SELECT SLEEP(60)");
    answered = absl::Now();
  });
  // The statement's bytes reach the server before the drop (whatever a
  // loaded machine does): it shows in the processlist.
  ASSERT_TRUE(Eventually(
      [&] {
        return (*db)->Scalar(
                   "SELECT COUNT(*) FROM information_schema."
                   "processlist WHERE info = 'SELECT SLEEP(60)'") == "1";
      },
      absl::Seconds(10)));
  const absl::Time dropped = absl::Now();
  ASSERT_TRUE(link_->Drop().ok());
  EXPECT_TRUE(
      Eventually([&] { return (*idle)->Closed(); }, o.link_timeout + kSlack));
  const absl::Duration idle_closed = absl::Now() - dropped;
  waiter.join();
  EXPECT_EQ(long_query.status().code(), absl::StatusCode::kUnavailable)
      << long_query.status();
  EXPECT_TRUE((*busy)->broken());
  EXPECT_LT(answered - dropped, o.link_timeout + kSlack);
  // The idle one fails at once, without waiting for its read timeout.
  const absl::Time before_query = absl::Now();
  absl::StatusOr<QueryResult> after = (*idle)->Query("SELECT 1");
  EXPECT_EQ(after.status().code(), absl::StatusCode::kUnavailable)
      << after.status();
  EXPECT_LT(absl::Now() - before_query, absl::Seconds(2));
  std::printf(
      "link timeout %s: idle connection closed %s after the drop, the "
      "SLEEP(60) failed after %s (%s)\n",
      Ms(o.link_timeout).c_str(), Ms(idle_closed).c_str(),
      Ms(answered - dropped).c_str(),
      std::string(long_query.status().message()).c_str());
}

// The ids netns_subscriber printed so far (its log).
std::vector<std::string> PrintedIds(const launch::ChildProcess& child) {
  std::vector<std::string> out;
  for (absl::string_view line :
       absl::StrSplit(child.Log(), '\n', absl::SkipEmpty())) {
    int id = 0;
    if (absl::SimpleAtoi(line, &id)) out.emplace_back(line);
  }
  return out;
}

class SilentSubscriberTest : public MsgqTest {
 protected:
  void SetUp() override {
    std::string why;
    if (!NetnsLink::Supported(&why)) GTEST_SKIP() << why;
    ASSERT_NO_FATAL_FAILURE(MsgqTest::SetUp());
    absl::StatusOr<std::unique_ptr<NetnsLink>> link = NetnsLink::Create();
    ASSERT_TRUE(link.ok()) << link.status();
    link_ = *std::move(link);
  }
  void TearDown() override {
    silent_.reset();  // before its namespace goes
    MsgqTest::TearDown();
  }

  std::unique_ptr<NetnsLink> link_;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::unique_ptr<launch::ChildProcess> silent_;
};

// msgqd listens on the root end of the link; subscriber S runs in the
// namespace (never acks), N outside. The link drops under S.
TEST_F(SilentSubscriberTest, SlotFreedAndMessagesGoToTheOthers) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=3"));
  auto server = Msgqd::Start(
      *db_, {"--databases=msgq", "--schema_reload_interval=200ms",
             absl::StrCat("--listen=", link_->host_address(), ":0"),
             absl::StrCat("--grpc_keepalive_time=",
                          absl::FormatDuration(kKeepaliveTime)),
             absl::StrCat("--grpc_keepalive_timeout=",
                          absl::FormatDuration(kKeepaliveTimeout))});
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<v1::Messaging::Stub> stub = (*server)->Stub();
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
      launch::OwnedDir::Create(absl::StrCat(kTempPrefix, "nfsub"));
  ASSERT_TRUE(dir.ok()) << dir.status();
  dir_ = *std::move(dir);
  absl::StatusOr<std::unique_ptr<launch::ChildProcess>> silent =
      launch::ChildProcess::Start(
          link_->Wrap(
              {MSGQ_NETNS_SUBSCRIBER_PATH, (*server)->address(), "msgq", "q"}),
          dir_->path() + "/subscriber.log");
  ASSERT_TRUE(silent.ok()) << silent.status();
  silent_ = *std::move(silent);
  ASSERT_TRUE(
      Eventually([&] { return absl::StrContains(silent_->Log(), "fields"); },
                 absl::Seconds(20)))
      << silent_->Log();
  AckingSubscriber other(stub.get(), nullptr, "q");
  ASSERT_TRUE(other.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub.get(), "q").subscribers() == 2; },
                 absl::Seconds(10)));

  Producer producer(*db_, "q", absl::Milliseconds(20));
  ASSERT_TRUE(Eventually([&] { return PrintedIds(*silent_).size() >= 10; },
                         absl::Seconds(30)));
  const absl::Time dropped = absl::Now();
  ASSERT_TRUE(link_->Drop().ok());
  const absl::Time drop_done = absl::Now();  // in effect from here on
  const absl::Duration freed =
      TimeUntil([&] { return FindTable(stub.get(), "q").subscribers() == 1; },
                dropped, kKeepaliveTime + kKeepaliveTimeout + kSlack);
  EXPECT_LT(freed, kKeepaliveTime + kKeepaliveTimeout + kSlack);
  // What S held comes back after its ack wait and goes to N (S may still
  // print a little of what reached it before the drop: the check of every
  // committed id below covers that).
  const std::vector<std::string> held = PrintedIds(*silent_);
  ASSERT_FALSE(held.empty());
  std::set<std::string> missing;
  EXPECT_TRUE(Eventually(
      [&] {
        missing.clear();
        const std::vector<std::string> got = other.ids();
        const std::set<std::string> on_n(got.begin(), got.end());
        for (const std::string& id : held) {
          if (!on_n.contains(id)) missing.insert(id);
        }
        return missing.empty();
      },
      absl::Seconds(30)))
      << missing.size() << " of S's " << held.size() << " ids never reached N";
  // N kept receiving while S's slot was still taken.
  size_t during = 0;
  for (const AckingSubscriber::Arrival& a : other.arrivals()) {
    during += a.at > dropped && a.at < dropped + freed;
  }
  EXPECT_GT(during, 0u);
  producer.Stop();
  ASSERT_TRUE(link_->Restore().ok());
  const std::set<std::string> committed = producer.committed_ids();
  EXPECT_EQ(producer.failures(), 0);
  missing.clear();
  EXPECT_TRUE(Eventually(
      [&] {
        missing.clear();
        const std::vector<std::string> got = other.ids();
        const std::set<std::string> on_n(got.begin(), got.end());
        for (const std::string& id : committed) {
          if (!on_n.contains(id)) missing.insert(id);
        }
        return missing.empty() &&
               db_->Scalar(
                   "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS "
                   "NULL") == "0";
      },
      absl::Seconds(30)))
      << missing.size() << " committed ids never reached N";
  // S got nothing inserted once the drop was in effect.
  std::map<std::string, absl::Time> inserted;
  for (const Producer::Insert& i : producer.committed()) {
    inserted[i.id] = i.started;
  }
  for (const std::string& id : PrintedIds(*silent_)) {
    ASSERT_TRUE(inserted.contains(id)) << id;
    EXPECT_LT(inserted[id], drop_done) << "S received " << id;
  }
  std::printf(
      "silent subscriber: slot freed %s after the drop (keepalive %s + %s); "
      "%zu of its messages redelivered to N, which got %zu rows meanwhile\n",
      Ms(freed).c_str(), Ms(kKeepaliveTime).c_str(),
      Ms(kKeepaliveTimeout).c_str(), held.size(), during);
}

}  // namespace
}  // namespace msgq::testing
