// MySQL primary failover (docs/several-instances.md#mysql-primary-failover):
// msgqd given a primary and its replica (--mysql_host=a,b) serves the writable
// one and moves when the replica is promoted, resuming the binlog there by
// GTID.
//
// Two private MariaDBs with GTID replication: db_ (MsgqTest's) is the
// primary, replica_ follows it with log_slave_updates (so its binlog holds
// the primary's GTIDs) and starts read-only.
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/log_wait.h"

namespace msgq::testing {
namespace {

class PrimaryFailoverTest : public MsgqTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MsgqTest::SetUp());
    auto replica = PrivateMariaDb::Start(
        {.extra_args = {"--server-id=2", "--log-slave-updates=ON",
                        "--read-only=ON"}});
    ASSERT_TRUE(replica.ok()) << replica.status();
    replica_ = *std::move(replica);
    ASSERT_TRUE(
        replica_
            ->Exec(absl::StrCat(
                "CHANGE MASTER TO MASTER_HOST='127.0.0.1', "
                "MASTER_PORT=",
                db_->port(), ", MASTER_USER='root', MASTER_USE_GTID=slave_pos"))
            .ok());
    ASSERT_TRUE(replica_->Exec("START SLAVE").ok());
    ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_ack_wait=60"));
    ASSERT_TRUE(CaughtUp());
  }

  // msgqd on both servers, primary first.
  void StartOnBoth() {
    ASSERT_NO_FATAL_FAILURE(StartServer(
        {"--mysql_socket=", absl::StrCat("--mysql_host=127.0.0.1:", db_->port(),
                                         ",127.0.0.1:", replica_->port())}));
  }

  // Waits until the replica applied everything the primary committed.
  bool CaughtUp() {
    const std::string primary = db_->Scalar("SELECT @@gtid_binlog_pos");
    return Eventually(
        [&] {
          auto r = replica_->Query(
              absl::StrCat("SELECT MASTER_GTID_WAIT('", primary, "', 0.2)"));
          return r.ok() && r->rows.size() == 1 && r->rows[0][0] == "0";
        },
        absl::Seconds(30));
  }

  // Promotes the replica: it applies what it received, stops replicating
  // and becomes writable.
  void Promote() {
    ASSERT_TRUE(Eventually(
        [&] {
          auto io = replica_->Query("SHOW SLAVE STATUS");
          if (!io.ok() || io->rows.empty()) return false;
          size_t col = 0;
          while (col < io->columns.size() &&
                 io->columns[col] != "Gtid_IO_Pos") {
            ++col;
          }
          if (col == io->columns.size()) return false;
          const std::string received = io->rows[0][col].value_or("");
          return replica_->Scalar("SELECT @@gtid_slave_pos") == received;
        },
        absl::Seconds(30)));
    ASSERT_TRUE(replica_->Exec("STOP SLAVE").ok());
    ASSERT_TRUE(replica_->Exec("RESET SLAVE ALL").ok());
    ASSERT_TRUE(replica_->Exec("SET GLOBAL read_only = 0").ok());
  }

  // Every id of msgq.q on `db`.
  static std::set<std::string> IdsIn(PrivateMariaDb& db) {
    std::set<std::string> out;
    auto r = db.Query("SELECT id FROM msgq.q");
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) {
      for (const auto& row : r->rows) out.insert(row[0].value_or(""));
    }
    return out;
  }

  std::unique_ptr<PrivateMariaDb> replica_;
};

// A steady producer writes to whichever server is the primary; the primary
// is killed, the replica promoted; msgqd follows. Every row the new primary
// has (committed and replicated) is delivered, and acked there; a message
// scheduled before the failover is not sent before its time.
TEST_F(PrimaryFailoverTest,
       KilledPrimaryPromotedReplicaEveryReplicatedRowDelivered) {
  ASSERT_NO_FATAL_FAILURE(StartOnBoth());
  StreamCollector sub(stub_.get(), "q");
  ASSERT_TRUE(sub.WaitForFields(absl::Seconds(10)));

  const int64_t due = NowNanos() + int64_t{6'000'000'000};
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "INSERT INTO msgq.q (id, time_next) VALUES (1000000, ", due, ")")));

  std::atomic<PrivateMariaDb*> target{db_.get()};
  std::atomic<bool> stop{false};
  std::atomic<int> next{1};
  std::thread producer([&] {
    std::unique_ptr<MysqlConnection> conn;
    PrivateMariaDb* on = nullptr;
    while (!stop.load()) {
      PrivateMariaDb* want = target.load();
      if (want != on || conn == nullptr || conn->broken()) {
        conn.reset();
        on = want;
        auto c = on->Connect();
        if (!c.ok()) {
          absl::SleepFor(absl::Milliseconds(20));
          continue;
        }
        conn = *std::move(c);
      }
      const int id = next.load();
      auto r = conn->Execute(
          absl::StrCat("INSERT IGNORE INTO msgq.q (id) VALUES (", id, ")"));
      if (r.ok()) next.fetch_add(1);
      absl::SleepFor(absl::Milliseconds(5));
    }
  });

  ASSERT_TRUE(sub.WaitForRows(50, absl::Seconds(30)));
  ASSERT_TRUE(db_->Kill().ok());
  const int killed_at = next.load();
  ASSERT_NO_FATAL_FAILURE(Promote());
  target.store(replica_.get());
  // Rows committed on the new primary after the move.
  ASSERT_TRUE(Eventually([&] { return next.load() >= killed_at + 100; },
                         absl::Seconds(60)));
  stop.store(true);
  producer.join();
  const int last = next.load() - 1;

  // Rows the old primary committed but never sent to the replica are lost
  // by MySQL (async replication); everything else is on the new primary.
  const std::set<std::string> expected = IdsIn(*replica_);
  for (int id = killed_at; id <= last; ++id) {
    ASSERT_TRUE(expected.count(std::to_string(id))) << id;
  }
  ASSERT_TRUE(expected.count("1000000"));
  EXPECT_GE(expected.size(), static_cast<size_t>(last - killed_at + 2));
  absl::Time scheduled_seen = absl::InfiniteFuture();
  ASSERT_TRUE(Eventually(
      [&] {
        std::vector<std::string> ids = sub.ids();
        std::set<std::string> got(ids.begin(), ids.end());
        if (scheduled_seen == absl::InfiniteFuture() && got.count("1000000")) {
          scheduled_seen = absl::Now();
        }
        for (const std::string& id : expected) {
          if (!got.count(id)) return false;
        }
        return true;
      },
      absl::Seconds(60)))
      << "received " << sub.row_count() << " of " << expected.size();
  EXPECT_GE(absl::ToUnixNanos(scheduled_seen), due);

  // Acked on the new primary: nothing stays pending there.
  std::vector<std::string> ids(expected.begin(), expected.end());
  int64_t acked = 0;
  grpc::Status ack = AckIds(stub_.get(), "q", ids, &acked);
  ASSERT_TRUE(ack.ok()) << ack.error_message();
  EXPECT_EQ(acked, static_cast<int64_t>(ids.size()));
  EXPECT_EQ(
      replica_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"),
      "0");
  // msgqd's log writer thread may trail the switch.
  EXPECT_TRUE(LogShows(
      *server_, absl::StrCat("MySQL primary: 127.0.0.1:", replica_->port()),
      absl::Seconds(10)))
      << server_->Log();
}

// A switchover: the primary stays up but turns read-only. msgqd connects
// as root, whose privileges let it write to a read-only server anyway, so
// only the primary monitor's @@read_only check moves it. After the move
// nothing more is written to the old primary; new rows on the new primary
// are delivered and acked there.
TEST_F(PrimaryFailoverTest, ReadOnlyPrimaryIsLeftForThePromotedReplica) {
  ASSERT_NO_FATAL_FAILURE(StartOnBoth());
  StreamCollector sub(stub_.get(), "q");
  ASSERT_TRUE(sub.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 10));
  ASSERT_TRUE(sub.WaitForRows(10, absl::Seconds(30)));

  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL read_only = 1"));
  // The monitor's @@read_only check sees it, or a new connection's check
  // does first (a round that borrows one right then, e.g. for the postpones
  // of the 10 sends after their grace): then no server is writable until
  // the promotion, and the monitor says so.
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string log = server_->Log();
        return log.find(absl::StrCat("MySQL primary: 127.0.0.1:", db_->port(),
                                     " turned read-only")) !=
                   std::string::npos ||
               log.find("MySQL primary: none writable now") !=
                   std::string::npos;
      },
      absl::Seconds(20)))
      << server_->Log();
  ASSERT_TRUE(CaughtUp());
  ASSERT_NO_FATAL_FAILURE(Promote());
  const std::string old_position = db_->Scalar("SELECT @@gtid_binlog_pos");

  ASSERT_TRUE(replica_->Exec("INSERT INTO msgq.q (id) VALUES (11), (12)").ok());
  ASSERT_TRUE(sub.WaitForRows(12, absl::Seconds(30)));
  std::vector<std::string> ids = sub.ids();
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 12u);
  int64_t acked = 0;
  grpc::Status ack = AckIds(stub_.get(), "q", ids, &acked);
  ASSERT_TRUE(ack.ok()) << ack.error_message();
  EXPECT_EQ(acked, 12);
  EXPECT_EQ(
      replica_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"),
      "0");
  // Nothing was written to the old primary after the move (its binlog
  // position stands still, its rows unacked).
  EXPECT_EQ(db_->Scalar("SELECT @@gtid_binlog_pos"), old_position);
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"),
            "10");
}

}  // namespace
}  // namespace msgq::testing
