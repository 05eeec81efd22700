// Leases against steps of MariaDB's wall clock: two msgqd with the default
// flags share two tables under a steady producer while MariaDB's clock
// (libfaketime, Debian's faketime package; msgqd's clocks are left alone)
// steps 20 s forward four times, as an NTP step would, and then 20 s back.
// No message may be sent by both instances within its ack wait, none may
// be lost, and after the step back a killed owner's table is still taken
// over within a lease or two (docs/design/lease-clocks.md).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/instances_fixture.h"
#include "tests/temp_dir.h"

namespace msgq::testing {
namespace {

constexpr char kFaketime[] =
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
// The tables' vt_ack_wait: a second send of a message within it, by the
// other instance, means both sent the table at once.
constexpr absl::Duration kAckWait = absl::Seconds(30);

class LeaseClockTest : public InstancesTest {
 protected:
  // MariaDB runs with libfaketime reading its offset from a file of the
  // test's ("+0" at the start; the cache re-reads it every second).
  PrivateMariaDb::Options DbOptions() override {
    absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
        MakeTempDir("faketime");
    if (dir.ok()) {
      offset_dir_ = *std::move(dir);
      offset_file_ = offset_dir_->path() + "/offset";
      WriteOffset(0);
    }
    PrivateMariaDb::Options options;
    options.env = {absl::StrCat("LD_PRELOAD=", kFaketime),
                   absl::StrCat("FAKETIME_TIMESTAMP_FILE=", offset_file_),
                   "FAKETIME_CACHE_DURATION=1", "DONT_FAKE_MONOTONIC=1"};
    return options;
  }

  void WriteOffset(int seconds) {
    std::ofstream(offset_file_, std::ios::trunc)
        << (seconds < 0 ? "" : "+") << seconds << "\n";
  }

  // MariaDB's clock minus this process's, in seconds.
  double MysqlAhead() {
    double mysql = 0;
    const std::string now = db_->Scalar("SELECT UNIX_TIMESTAMP(NOW(6))");
    EXPECT_TRUE(absl::SimpleAtod(now, &mysql)) << now;
    return mysql - absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  }

  // Steps MariaDB's clock to `seconds` ahead of the real one and waits
  // until the test's session shows it (libfaketime re-reads the file
  // after a second; it has taken up to 2.5 s here).
  void StepMysqlClock(int seconds) {
    WriteOffset(seconds);
    double ahead = 0;
    ASSERT_TRUE(Eventually(
        [&] {
          ahead = MysqlAhead();
          return std::abs(ahead - seconds) < 0.5;
        },
        absl::Seconds(10)))
        << "libfaketime did not step MariaDB to " << seconds
        << " s ahead: it is " << ahead << " s ahead";
  }

  std::unique_ptr<Msgqd> Start() {
    auto server = Msgqd::Start(
        *db_, {"--databases=msgq", "--schema_reload_interval=200ms"});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  std::unique_ptr<launch::OwnedDir> offset_dir_;
  std::string offset_file_;
};

struct Delivery {
  std::string instance;
  absl::Time at;
};

TEST_F(LeaseClockTest, MariadbClockStepsNeverMakeTwoOwners) {
  ASSERT_TRUE(access(kFaketime, R_OK) == 0)
      << kFaketime << " is missing: tools/setup installs Debian's faketime";
  ASSERT_NEAR(MysqlAhead(), 0, 0.5);
  const std::vector<std::string> tables = {"q1", "q2"};
  for (const std::string& t : tables) {
    ASSERT_NO_FATAL_FAILURE(CreateTable(t));  // vt_ack_wait=30
  }
  std::map<std::string, std::unique_ptr<Msgqd>> servers;
  servers["a"] = Start();
  servers["b"] = Start();
  ASSERT_TRUE(servers["a"] != nullptr && servers["b"] != nullptr);
  // One table each once b has joined.
  ASSERT_TRUE(Eventually(
      [&] { return Owned(*servers["a"]) == 1 && Owned(*servers["b"]) == 1; },
      absl::Seconds(30)));
  std::map<std::string, std::unique_ptr<v1::Messaging::Stub>> stubs;
  for (const auto& [name, server] : servers) stubs[name] = server->Stub();
  // Per table, one subscriber on each instance (acking on it, else on the
  // other): what a subscriber of `a` receives, `a` sent.
  std::map<std::pair<std::string, std::string>,
           std::unique_ptr<AckingSubscriber>>
      subscribers;  // (table, instance)
  for (const std::string& t : tables) {
    for (const auto& [name, stub] : stubs) {
      v1::Messaging::Stub* other = stubs[name == "a" ? "b" : "a"].get();
      auto s = std::make_unique<AckingSubscriber>(stub.get(), other, t);
      ASSERT_TRUE(s->WaitForFields(absl::Seconds(10)));
      subscribers[{t, name}] = std::move(s);
    }
  }
  std::map<std::string, std::unique_ptr<Producer>> producers;
  for (const std::string& t : tables) {
    producers[t] = std::make_unique<Producer>(*db_, t, absl::Milliseconds(4));
  }
  absl::SleepFor(absl::Seconds(3));  // messages flowing

  // Four steps forward, each kept for more than a lease (5 s), then one
  // back.
  for (int step = 1; step <= 4; ++step) {
    ASSERT_NO_FATAL_FAILURE(StepMysqlClock(20 * step));
    absl::SleepFor(absl::Seconds(5));
  }
  ASSERT_NO_FATAL_FAILURE(StepMysqlClock(60));
  absl::SleepFor(absl::Seconds(6));

  // Both alive until here: every second send by the other instance within
  // the ack wait is a table sent by two at once.
  const std::string victim = State(*servers["a"], "q1") == "owner" ? "a" : "b";
  const std::string survivor = victim == "a" ? "b" : "a";
  const absl::Time killed = absl::Now();
  servers[victim]->Kill();
  // A dead owner's lease, renewed after MariaDB's clock went back (its
  // expiry 20 s ahead of that clock), is taken within about a lease.
  ASSERT_TRUE(Eventually([&] { return Owned(*servers[survivor]) == 2; },
                         absl::Seconds(30)))
      << servers[survivor]->Log();
  const absl::Duration takeover = absl::Now() - killed;
  EXPECT_LT(takeover, absl::Seconds(10));
  absl::SleepFor(absl::Seconds(2));
  for (auto& [t, p] : producers) p->Stop();

  // Nothing lost: every committed row reached a subscriber.
  std::map<std::string, std::set<std::string>> committed;
  size_t total = 0;
  for (const auto& [t, p] : producers) {
    committed[t] = p->committed_ids();
    total += committed[t].size();
  }
  auto missing = [&](const std::string& t) {
    std::set<std::string> got;
    for (const auto& [key, s] : subscribers) {
      if (key.first != t) continue;
      for (const std::string& id : s->ids()) got.insert(id);
    }
    size_t n = 0;
    for (const std::string& id : committed[t]) n += !got.contains(id);
    return n;
  };
  for (const std::string& t : tables) {
    EXPECT_TRUE(Eventually([&] { return missing(t) == 0; }, absl::Seconds(60)))
        << t << ": " << missing(t) << " of " << committed[t].size()
        << " committed rows never arrived";
  }

  // Deliveries before the kill, by id, with the instance that sent each.
  int twice = 0;
  std::vector<std::string> examples;
  for (const std::string& t : tables) {
    std::map<std::string, std::vector<Delivery>> by_id;
    for (const auto& [key, s] : subscribers) {
      if (key.first != t) continue;
      for (const AckingSubscriber::Arrival& a : s->arrivals()) {
        if (a.at < killed) by_id[a.id].push_back({key.second, a.at});
      }
    }
    for (const auto& [id, deliveries] : by_id) {
      bool both = false;
      for (const Delivery& x : deliveries) {
        for (const Delivery& y : deliveries) {
          both |= x.instance != y.instance &&
                  absl::AbsDuration(x.at - y.at) < kAckWait;
        }
      }
      if (!both) continue;
      ++twice;
      if (examples.size() < 10) examples.push_back(absl::StrCat(t, ":", id));
    }
  }
  std::printf(
      "%zu rows committed; %d sent by both instances within their ack wait; "
      "takeover after the kill %.2f s\n",
      total, twice, absl::ToDoubleSeconds(takeover));
  EXPECT_EQ(twice, 0) << "e.g. " << absl::StrJoin(examples, ", ");
  EXPECT_GT(total, 2000u);  // messages flowed across every step
}

}  // namespace
}  // namespace msgq::testing
