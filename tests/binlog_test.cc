// Instant delivery from the binlog: a real MariaDB with binlog_format=ROW,
// a real msgqd, real gRPC streams. vt_poller_interval is 30 s throughout, so
// anything delivered within seconds came through the binlog (or a poll msgq
// ran because of it), not the interval poll.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tests/log_wait.h"
#include "tests/stuck_subscriber.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class BinlogTest : public MsgqTest {
 protected:
  int64_t Int(const std::string& sql) {
    int64_t v = 0;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }
};

TEST_F(BinlogTest, CommittedInsertArrivesLongBeforeThePoll) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer();
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 1; },
                 absl::Seconds(5)));
  for (int i = 1; i <= 5; ++i) {
    InsertRange("q", i, i);
    ASSERT_TRUE(s.WaitForRows(static_cast<size_t>(i), absl::Seconds(5)))
        << "message " << i << " waited for a poll";
  }
  EXPECT_THAT(s.ids(), ElementsAre("1", "2", "3", "4", "5"));
}

TEST_F(BinlogTest, RolledBackInsertIsNeverDelivered) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer();
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  auto txn = db_->Connect();
  ASSERT_TRUE(txn.ok());
  ASSERT_TRUE((*txn)->Execute("BEGIN").ok());
  ASSERT_TRUE((*txn)->Execute("INSERT INTO msgq.q (id) VALUES (1)").ok());
  ASSERT_TRUE((*txn)->Execute("ROLLBACK").ok());
  InsertRange("q", 2, 2);
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(5)));
  EXPECT_FALSE(s.WaitForRows(2, absl::Seconds(1)));
  EXPECT_THAT(s.ids(), ElementsAre("2"));
}

TEST_F(BinlogTest, FutureInsertIsDeliveredWhenDue) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer();
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  const int64_t due = NowNanos() + 1'500'000'000LL;
  Exec(
      absl::StrCat("INSERT INTO msgq.q (id, time_next) VALUES (1, ", due, ")"));
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  const int64_t arrived = NowNanos();
  EXPECT_GE(arrived, due);
  // Not at the next poll (30 s); slack for a loaded machine.
  EXPECT_LE(arrived - due, 5'000'000'000LL) << "late by " << (arrived - due);
  std::printf("binlog-scheduled delivery late by %.1f ms\n",
              (arrived - due) / 1e6);
}

// DML on queued messages: the cache follows. One stuck subscriber (it takes
// 4 rows and acks none) keeps the rest queued in the cache.
TEST_F(BinlogTest, DmlAckRescheduleAndDeleteUpdateTheCache) {
  CreateTable("q", "vt_poller_interval=30,vt_batch_size=1,vt_ack_wait=60");
  StartServer();
  WaitForBinlog("q");
  Exec("INSERT INTO msgq.q (id, message) VALUES " + [] {
    std::string v;
    for (int i = 1; i <= 12; ++i) {
      absl::StrAppend(&v, i > 1 ? "," : "", "(", i, ", JSON_OBJECT('n', ", i,
                      "))");
    }
    return v;
  }());
  // The subscriber took 1..4 (one INSERT: one time_next, id order); 5..12
  // stay queued.
  pid_t stuck = 0;
  int64_t cached = -1;
  ASSERT_NO_FATAL_FAILURE(StartStuckSubscriber(MSGQ_CLI_PATH, *server_, *db_,
                                               "q", 4, &stuck, &cached));
  ASSERT_EQ(cached, 8);
  const int64_t now = NowNanos();
  Exec(absl::StrCat("UPDATE msgq.q SET time_acked = ", now,
                    ", time_next = NULL WHERE id = 12"));
  Exec("DELETE FROM msgq.q WHERE id = 11");
  Exec(absl::StrCat("UPDATE msgq.q SET time_next = ", now + 3'600'000'000'000LL,
                    " WHERE id = 10"));
  EXPECT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "q").cached() == cached - 3; },
      absl::Seconds(20)))
      << "cached before " << cached << ", now "
      << FindTable(stub_.get(), "q").cached() << ", in flight "
      << FindTable(stub_.get(), "q").in_flight() << ", unacked in db "
      << db_->Scalar(
             "SELECT GROUP_CONCAT(id) FROM msgq.q WHERE time_acked IS NULL AND "
             "time_next < UNIX_TIMESTAMP()*1000000000");
  kill(stuck, SIGKILL);
  waitpid(stuck, nullptr, 0);
  // A reader gets what is left: not 10 (next hour), 11 (deleted) or 12
  // (acked).
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(static_cast<size_t>(cached - 3), absl::Seconds(10)))
      << "cached " << cached << " got " << s.row_count() << " "
      << s.status().error_message() << " / "
      << FindTable(stub_.get(), "q").cached();
  // What the killed client took (1..4) comes back only after its ack wait
  // (60 s). A row inserted now comes after anything else the binlog or the
  // cache holds (in order, and due later): once it is here the rest is
  // exact, each once, and not 10 (next hour), 11 (deleted) or 12 (acked).
  Exec("INSERT INTO msgq.q (id, message) VALUES (13, JSON_OBJECT('n', 13))");
  ASSERT_TRUE(s.WaitForRows(static_cast<size_t>(cached - 2), absl::Seconds(10)))
      << s.row_count();
  EXPECT_THAT(s.ids(), ElementsAre("5", "6", "7", "8", "9", "13"));
}

TEST_F(BinlogTest, KilledBinlogConnectionResumesWithoutLoss) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer();
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  InsertRange("q", 1, 10);
  ASSERT_TRUE(s.WaitForRows(10, absl::Seconds(5)));
  for (int round = 0; round < 3; ++round) {
    // A killed dump can still send the events it was sending (KILL is
    // noticed between events), so the last round's rows may arrive before
    // the stream is cut and taken up again: wait for the new dump.
    std::string dump_id;
    ASSERT_TRUE(Eventually(
        [&] {
          auto dump = db_->Query(
              "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND "
              "LIKE 'Binlog Dump%'");
          if (!dump.ok() || dump->rows.size() != 1) return false;
          dump_id = dump->rows[0][0].value_or("");
          return true;
        },
        absl::Seconds(10)))
        << "round " << round << ": no single binlog dump";
    Exec("KILL " + dump_id);
    // Inserts while the stream is down are found after the resume.
    InsertRange("q", 11 + round * 10, 20 + round * 10);
    ASSERT_TRUE(s.WaitForRows(20 + round * 10, absl::Seconds(10)))
        << "round " << round << ": " << s.row_count();
  }
  std::set<std::string> unique;
  for (const auto& id : s.ids()) unique.insert(id);
  EXPECT_EQ(unique.size(), 40u);
  // msgqd's log writer thread may trail the rows.
  EXPECT_TRUE(
      LogShows(*server_, "binlog: stream interrupted", absl::Seconds(10)))
      << server_->Log();
}

// RESET MASTER (like a purge or a failover) makes the resume GTID unknown to
// the server (error 1236): msgqd starts again from the current position,
// polls once to cover the gap, and says so once.
TEST_F(BinlogTest, ResetMasterKeepsInstantDelivery) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer();
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 1; },
                 absl::Seconds(5)));
  InsertRange("q", 1, 1);
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(5)));
  Exec("RESET MASTER");
  InsertRange("q", 2, 2);
  // Well inside the 30 s poll interval (msgqd notices the reset at its
  // next idle heartbeat, within about 2 s on an idle machine).
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(15))) << server_->Log();
  // Instant again, not only the one recovery poll.
  for (int i = 3; i <= 4; ++i) {
    InsertRange("q", i, i);
    ASSERT_TRUE(s.WaitForRows(static_cast<size_t>(i), absl::Seconds(10)))
        << "message " << i << "\n"
        << server_->Log();
  }
  EXPECT_THAT(s.ids(), ElementsAre("1", "2", "3", "4"));
  // msgqd's log writer thread may trail the rows.
  EXPECT_TRUE(
      LogShows(*server_, "binlog: resume position is gone", absl::Seconds(10)));
  const std::string log = server_->Log();
  EXPECT_EQ(log.find("binlog: resume position is gone"),
            log.rfind("binlog: resume position is gone"))
      << log;
}

// Two msgqd given the same --binlog_server_id evict each other's dump; each
// eviction is recognised and named once.
TEST_F(BinlogTest, SameServerIdEvictionIsReportedWithTheFlag) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer({"--binlog_server_id=4242"});
  WaitForBinlog("q");
  auto second =
      Msgqd::Start(*db_, {"--databases=msgq", "--schema_reload_interval=200ms",
                          "--binlog_server_id=4242"});
  ASSERT_TRUE(second.ok()) << second.status();
  auto log_of_either = [&] { return server_->Log() + (*second)->Log(); };
  EXPECT_TRUE(Eventually(
      [&] {
        return log_of_either().find("evicted by another replica") !=
               std::string::npos;
      },
      absl::Seconds(10)))
      << log_of_either();
  EXPECT_THAT(log_of_either(), HasSubstr("--binlog_server_id"));
}

class NoBinlogTest : public BinlogTest {
 protected:
  PrivateMariaDb::Options DbOptions() override {
    PrivateMariaDb::Options o;
    o.binlog = false;
    return o;
  }
};

TEST_F(NoBinlogTest, FallsBackToPollingWithOneClearWarning) {
  CreateTable("q", "vt_poller_interval=0.3");
  StartServer();
  ASSERT_TRUE(LogShows(*server_, "binary log is off", absl::Seconds(10)));
  EXPECT_THAT(server_->Log(), HasSubstr("--log-bin"));
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  InsertRange("q", 1, 3);
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(5)));
  // One warning, not one per attempt.
  const std::string log = server_->Log();
  size_t count = 0;
  for (size_t at = log.find("binary log is off"); at != std::string::npos;
       at = log.find("binary log is off", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u);
}

TEST_F(BinlogTest, StatementFormatFallsBackWithTheReason) {
  Exec("SET GLOBAL binlog_format = 'STATEMENT'");
  CreateTable("q", "vt_poller_interval=0.3");
  StartServer();
  ASSERT_TRUE(
      LogShows(*server_, "binlog_format is STATEMENT", absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  StreamCollector s(stub_.get(), "q");
  InsertRange("q", 1, 2);
  EXPECT_TRUE(s.WaitForRows(2, absl::Seconds(5)));
}

TEST_F(BinlogTest, MissingReplicationPrivilegeFallsBackWithTheFix) {
  CreateTable("q", "vt_poller_interval=0.3");
  Exec("CREATE USER 'limited'@'localhost'");
  Exec(
      "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON msgq.* TO "
      "'limited'@'localhost'");
  StartServer({"--mysql_user=limited"});
  ASSERT_TRUE(LogShows(*server_, "GRANT REPLICATION SLAVE", absl::Seconds(10)))
      << server_->Log();
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  StreamCollector s(stub_.get(), "q");
  InsertRange("q", 1, 2);
  EXPECT_TRUE(s.WaitForRows(2, absl::Seconds(5)));
  int64_t acked = 0;
  EXPECT_TRUE(AckIds(stub_.get(), "q", {"1", "2"}, &acked).ok());
  EXPECT_EQ(acked, 2);
}

// The binlog carries DDL: a table created, or altered into a message
// table, is served within a second, not at the next schema reload (60 s
// here); a dropped one ends its streams.
TEST_F(BinlogTest, NewAndAlteredTablesAreServedRightAfterTheirDdl) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer({"--schema_reload_interval=60s"});
  WaitForBinlog("q");
  auto served_within = [&](const std::string& table, absl::Duration bound) {
    const absl::Time t0 = absl::Now();
    const bool served = Eventually(
        [&] { return FindTable(stub_.get(), table).discovery() == "binlog"; },
        bound);
    std::printf("%s served after %.0f ms\n", table.c_str(),
                absl::ToDoubleMilliseconds(absl::Now() - t0));
    return served;
  };
  CreateTable("r", "vt_poller_interval=30");
  ASSERT_TRUE(served_within("r", absl::Seconds(1))) << server_->Log();
  StreamCollector s(stub_.get(), "r");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(5)));
  InsertRange("r", 1, 1);
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(5)));
  // A plain table, then made a message table by its comment.
  Exec(MessageTableDdl("p", "an ordinary table"));
  Exec("ALTER TABLE msgq.p COMMENT '" +
       MessageComment("vt_poller_interval=30") + "'");
  ASSERT_TRUE(served_within("p", absl::Seconds(1))) << server_->Log();
  Exec("DROP TABLE msgq.r");
  ASSERT_TRUE(s.WaitForEnd(absl::Seconds(5))) << server_->Log();
  EXPECT_EQ(s.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.status().error_message(),
            "message table was changed or dropped: reconnect");
}

// A message table whose comment does not load, fixed by an ALTER TABLE ...
// COMMENT: loaded at the ALTER's binlog event, not at the next schema
// reload (60 s here).
TEST_F(BinlogTest, AFixedCommentIsLoadedRightAfterItsAlter) {
  CreateTable("q", "vt_poller_interval=30");
  CreateTable("broken", "vt_ack_wait=-1");
  StartServer({"--schema_reload_interval=60s"});
  WaitForBinlog("q");
  ASSERT_FALSE(FindTable(stub_.get(), "broken").loaded()) << server_->Log();
  Exec("ALTER TABLE msgq.broken COMMENT '" +
       MessageComment("vt_ack_wait=5,vt_poller_interval=30") + "'");
  const absl::Time altered = absl::Now();
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "broken").loaded(); },
                 absl::Seconds(2)))
      << server_->Log();
  std::printf("loaded %.0f ms after the ALTER\n",
              absl::ToDoubleMilliseconds(absl::Now() - altered));
  StreamCollector s(stub_.get(), "broken");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(5)));
  InsertRange("broken", 1, 1);
  EXPECT_TRUE(s.WaitForRows(1, absl::Seconds(5))) << server_->Log();
}

}  // namespace
}  // namespace msgq::testing
