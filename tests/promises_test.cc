// Promises the docs make of the engine and server that no other test guards:
// each test below names the page and sentence it holds msgqd to, runs a real
// private MariaDB and a real msgqd, and fails when that promise breaks.
//
// Waiting is on conditions with generous deadlines (a loaded 2-core box);
// where "not before T" matters the test checks the state before T instead of
// sleeping. Writes are held back, where a test needs them pending, by a row
// lock of the test's own (SELECT ... FOR UPDATE in an open transaction), so
// "pending" is a state and not a race.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tests/log_wait.h"
#include "tests/stuck_subscriber.h"

#ifndef MSGQ_CLI_PATH
#error "MSGQ_CLI_PATH must be defined"
#endif

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

class PromisesTest : public MsgqTest {
 protected:
  void TearDown() override {
    if (stuck_ > 0) {
      kill(stuck_, SIGKILL);
      waitpid(stuck_, nullptr, 0);
      stuck_ = 0;
    }
  }

  void WaitForDiscovery(const std::string& table, const std::string& mode,
                        absl::Duration timeout = absl::Seconds(20)) {
    ASSERT_TRUE(Eventually(
        [&] { return FindTable(stub_.get(), table).discovery() == mode; },
        timeout))
        << "discovery is " << FindTable(stub_.get(), table).discovery()
        << ", wanted " << mode << "\n"
        << server_->Log();
  }

  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }

  // Ids (as text) of `sql`'s single column.
  std::vector<std::string> Ids(const std::string& sql) {
    std::vector<std::string> out;
    auto r = db_->Query(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status();
    if (!r.ok()) return out;
    for (const auto& row : r->rows) out.push_back(row[0].value_or("<NULL>"));
    return out;
  }

  // Inserts ids [from, to] with a ~`bytes` message each, built by the server
  // (the statement itself stays small).
  void InsertPadded(const std::string& table, int from, int to, int bytes) {
    std::string values;
    for (int i = from; i <= to; ++i) {
      absl::StrAppend(&values, i > from ? "," : "", "(", i,
                      ", JSON_OBJECT('pad', REPEAT('x', ", bytes, ")))");
    }
    Exec("INSERT INTO msgq.`" + table + "` (id, message) VALUES " + values);
  }

  // A second connection holding row locks on `where` rows of msgq.`table`
  // until Release(): msgqd's postpones and acks of those rows wait.
  class RowLock {
   public:
    RowLock(PrivateMariaDb* db, const std::string& table,
            const std::string& where) {
      auto conn = db->Connect();
      EXPECT_TRUE(conn.ok()) << conn.status();
      if (!conn.ok()) return;
      conn_ = *std::move(conn);
      auto begin = conn_->Execute("BEGIN");
      EXPECT_TRUE(begin.ok()) << begin.status();
      auto lock = conn_->Query("SELECT id FROM msgq.`" + table + "` WHERE " +
                               where + " FOR UPDATE");
      EXPECT_TRUE(lock.ok()) << lock.status();
    }
    void Release() {
      if (conn_ == nullptr) return;
      auto r = conn_->Execute("ROLLBACK");
      EXPECT_TRUE(r.ok()) << r.status();
      conn_.reset();
    }
    ~RowLock() { Release(); }

   private:
    std::unique_ptr<MysqlConnection> conn_;
  };

  pid_t stuck_ = 0;
};

// docs/api.md#the-grpc-service: "`discovery` (`binlog` or `poll`)";
// README.md#msgq: "Without binlog access msgq falls back to polling";
// docs/operations.md#start-stop-and-the-binlog: "the server `log_bin` with
// `binlog_format=ROW` ... Otherwise msgqd logs one warning that names the
// reason and the fix, and polls";
// docs/architecture.md#resume-position-resets-and-ddl: "After a broken
// stream msgqd resumes".
// msgqd decides at each (re)connect of its dump (BinlogWatcher::StreamOnce
// reads @@binlog_format); a FAILED_PRECONDITION is checked again every 30 s
// (BinlogWatcher::Options::recheck_interval). So: follow, switch the server
// to STATEMENT and kill the dump (it cannot be followed again): "poll";
// switch back to ROW: "binlog" again within the recheck. Messages keep
// arriving in every phase.
TEST_F(PromisesTest, DiscoverySwitchesToPollWhenBinlogCannotBeFollowedAndBack) {
  // Unacked rows come back only after 300 s: the exact sequence below
  // holds however long the rediscovery takes on a loaded machine.
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_poller_interval=1,vt_ack_wait=300"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog"));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(10)));

  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL binlog_format = 'STATEMENT'"));
  auto dump = db_->Query(
      "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE "
      "'Binlog Dump%'");
  ASSERT_TRUE(dump.ok()) << dump.status();
  ASSERT_EQ(dump->rows.size(), 1u);
  ASSERT_NO_FATAL_FAILURE(Exec("KILL " + *dump->rows[0][0]));
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "poll"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 4, 6));
  ASSERT_TRUE(s.WaitForRows(6, absl::Seconds(20))) << s.row_count();
  // Still polling (nothing to follow), and the warning names the reason.
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  // The warning comes with the failed reconnect, which may follow the
  // switch to "poll" (at the stream's end) by its backoff.
  EXPECT_TRUE(
      LogShows(*server_, "binlog_format is STATEMENT", absl::Seconds(30)))
      << server_->Log();

  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL binlog_format = 'ROW'"));
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog", absl::Seconds(90)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 7, 9));
  ASSERT_TRUE(s.WaitForRows(9, absl::Seconds(20))) << s.row_count();
  EXPECT_THAT(s.ids(),
              ElementsAre("1", "2", "3", "4", "5", "6", "7", "8", "9"));
  EXPECT_TRUE(FindTable(stub_.get(), "q").discovery() == "binlog");
}

// The same switch when the stream dies and cannot be taken up again: the
// msgqd user loses REPLICATION SLAVE and its dump is killed; the reconnect
// is refused ("missing privilege", FAILED_PRECONDITION): "poll"; GRANT it
// back: "binlog" again within the 30 s recheck. Messages keep arriving.
TEST_F(PromisesTest, DiscoverySwitchesToPollWhenTheDumpDiesForGoodAndBack) {
  // Unacked rows come back only after 300 s: the exact sequence below
  // holds however long the rediscovery takes on a loaded machine.
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_poller_interval=1,vt_ack_wait=300"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'mq'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON msgq.* TO "
           "'mq'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO "
           "'mq'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(StartServer({"--mysql_user=mq"}));
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog"));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(10)));

  ASSERT_NO_FATAL_FAILURE(
      Exec("REVOKE REPLICATION SLAVE ON *.* FROM 'mq'@'localhost'"));
  auto dump = db_->Query(
      "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE "
      "'Binlog Dump%'");
  ASSERT_TRUE(dump.ok()) << dump.status();
  ASSERT_EQ(dump->rows.size(), 1u);
  ASSERT_NO_FATAL_FAILURE(Exec("KILL " + *dump->rows[0][0]));
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "poll"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 4, 6));
  ASSERT_TRUE(s.WaitForRows(6, absl::Seconds(20))) << s.row_count();
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  // The warning comes with the failed reconnect, which may follow the
  // switch to "poll" (at the stream's end) by its backoff.
  EXPECT_TRUE(LogShows(*server_, "GRANT REPLICATION SLAVE", absl::Seconds(30)))
      << server_->Log();

  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT REPLICATION SLAVE ON *.* TO 'mq'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog", absl::Seconds(90)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 7, 9));
  ASSERT_TRUE(s.WaitForRows(9, absl::Seconds(20))) << s.row_count();
  EXPECT_THAT(s.ids(),
              ElementsAre("1", "2", "3", "4", "5", "6", "7", "8", "9"));
}

// docs/tables.md#enqueue-schedule-ack-and-reschedule-with-sql:
// "**Reschedule**: `UPDATE t SET time_next = ...,
// priority = ... WHERE id IN (...) AND time_acked IS NULL`. With the binlog
// on, msgqd follows such DML at once", and "scheduled rows never early"
// (docs/architecture.md#delivery-guarantees). Rows
// scheduled an hour ahead are brought forward by plain SQL: one to 3 s from
// now (sent then, not before), one to now (sent at once); the interval poll
// (300 s) plays no part.
TEST_F(PromisesTest, SqlRescheduleEarlierIsSentAtTheNewTime) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=300"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog"));
  const int64_t hour_ahead = NowNanos() + 3600 * kSecond;
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "INSERT INTO msgq.q (id, time_next, message) VALUES (1, ", hour_ahead,
      ", '{}'), (2, ", hour_ahead, ", '{}'), (3, ", hour_ahead, ", '{}')")));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 1; },
                 absl::Seconds(10)));

  const int64_t due = NowNanos() + 3 * kSecond;
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("UPDATE msgq.q SET time_next = ", due,
                        " WHERE id IN (2) AND time_acked IS NULL")));
  // Not early: nothing arrives while the new time is ahead.
  while (NowNanos() < due - 100'000'000LL) {
    ASSERT_EQ(s.row_count(), 0u) << "sent before its new time_next";
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(20)));
  EXPECT_THAT(s.ids(), ElementsAre("2"));

  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("UPDATE msgq.q SET time_next = ", NowNanos(),
                        " WHERE id IN (3) AND time_acked IS NULL")));
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(20)));
  EXPECT_THAT(s.ids(), ElementsAre("2", "3"));
  // Row 1 keeps its hour: still unsent.
  EXPECT_EQ(Int("SELECT epoch FROM msgq.q WHERE id = 1"), 0);
}

// docs/tables.md#enqueue-schedule-ack-and-reschedule-with-sql:
// "**Reschedule**: `UPDATE t SET ..., priority = ...`
// ... msgqd follows such DML at once" and "priority ... lower is sent first".
// Rows already queued in msgqd's cache (its only subscriber is stuck) get a
// new priority by plain SQL; when a subscriber can take them, they come
// first, in their new order, ahead of rows with lower ids.
TEST_F(PromisesTest, SqlReprioritizedCachedRowsAreSentInTheirNewOrder) {
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "q", "vt_poller_interval=300,vt_batch_size=1,vt_ack_wait=300"));
  // Rows the binlog names are read back by id (not queued from their row
  // image, which msgqd does only when no read of the id came within 3 s
  // before): the general log below shows when that read started.
  ASSERT_NO_FATAL_FAILURE(StartServer({"--binlog_discovery=fetch"}));
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog"));
  for (int from = 1; from <= 24; from += 12) {
    ASSERT_NO_FATAL_FAILURE(InsertPadded("q", from, from + 11, 100));
  }
  int64_t cached = 0;
  ASSERT_NO_FATAL_FAILURE(StartStuckSubscriber(MSGQ_CLI_PATH, *server_, *db_,
                                               "q", 4, &stuck_, &cached));
  // The unsent rows are all cached (vt_cache_size 10000), best (lowest id)
  // first.
  const std::vector<std::string> queued =
      Ids("SELECT id FROM msgq.q WHERE epoch = 0 ORDER BY id");
  ASSERT_EQ(queued.size(), 20u);
  ASSERT_EQ(cached, 20);
  const std::string last = queued.back();
  const std::string before_last = queued[queued.size() - 2];

  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL log_output = 'TABLE'"));
  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL general_log = 1"));
  // msgqd drops a changed row from its cache when the binlog names it, then
  // rereads it by id and queues it again: once that read has started (the
  // general log shows it) and the cache is back to its size, the row is
  // queued with its new priority.
  auto wait_for_fetch = [&](const std::string& id) {
    return Eventually(
               [&] {
                 // msgqd's read starts with SELECT `priority`; this query
                 // (logged too) does not.
                 return Int("SELECT COUNT(*) FROM mysql.general_log WHERE "
                            "argument LIKE 'SELECT `priority`%WHERE `id` IN (" +
                            id + ") AND%'") > 0;
               },
               absl::Seconds(20)) &&
           Eventually(
               [&] { return FindTable(stub_.get(), "q").cached() == cached; },
               absl::Seconds(20));
  };
  ASSERT_NO_FATAL_FAILURE(Exec("UPDATE msgq.q SET priority = 0 WHERE id IN (" +
                               last + ") AND time_acked IS NULL"));
  ASSERT_TRUE(wait_for_fetch(last));
  ASSERT_NO_FATAL_FAILURE(Exec("UPDATE msgq.q SET priority = 1 WHERE id IN (" +
                               before_last + ") AND time_acked IS NULL"));
  ASSERT_TRUE(wait_for_fetch(before_last));

  kill(stuck_, SIGKILL);
  waitpid(stuck_, nullptr, 0);
  stuck_ = 0;
  // Subscribe once msgqd has let the killed stream go (the rows it took
  // stay in flight for their ack wait, 300 s) and the cache holds what it
  // held before the kill.
  ASSERT_TRUE(Eventually(
      [&] {
        const v1::TableStatus t = FindTable(stub_.get(), "q");
        return t.subscribers() == 0 && t.cached() >= cached;
      },
      absl::Seconds(20)))
      << FindTable(stub_.get(), "q").cached() << " cached of " << cached;
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(static_cast<size_t>(cached), absl::Seconds(30)))
      << s.row_count() << " of " << cached;
  const std::vector<std::string> ids = s.ids();
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], last) << absl::StrJoin(ids, ",");
  EXPECT_EQ(ids[1], before_last) << absl::StrJoin(ids, ",");
}

// docs/operations.md#start-stop-and-the-binlog: "SIGTERM or SIGINT ends
// open streams with
// `UNAVAILABLE`, flushes every table's pending postpones and acks ... and
// exits 0". Two ack requests are accepted while a row lock holds their
// statement back (one running, one waiting behind it); SIGTERM arrives; the
// lock goes. Both acks commit before msgqd exits 0, and their callers get
// their counts.
TEST_F(PromisesTest, AcksAcceptedBeforeSigtermAreCommitted) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=300"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 6));
  ASSERT_NO_FATAL_FAILURE(StartServer({"--shutdown_timeout=60s"}));
  RowLock lock(db_.get(), "q", "id = 1");

  grpc::Status first_status, second_status;
  int64_t first_acked = -1, second_acked = -1;
  std::thread first([&] {
    first_status = AckIds(stub_.get(), "q", {"1", "2", "3"}, &first_acked);
  });
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").in_flight() == 3; },
                 absl::Seconds(20)))
      << FindTable(stub_.get(), "q").in_flight();
  std::thread second([&] {
    second_status = AckIds(stub_.get(), "q", {"4", "5"}, &second_acked);
  });
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").in_flight() == 5; },
                 absl::Seconds(20)))
      << FindTable(stub_.get(), "q").in_flight();
  // Nothing committed yet.
  ASSERT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT NULL"), 0);

  std::atomic<int> exit_code{-2};
  std::thread stopper(
      [&] { exit_code = server_->Terminate(absl::Seconds(90), SIGTERM); });
  ASSERT_TRUE(LogShows(*server_, "shutting down", absl::Seconds(20)))
      << server_->Log();
  lock.Release();
  stopper.join();
  first.join();
  second.join();
  EXPECT_EQ(exit_code.load(), 0) << server_->Log();
  EXPECT_EQ(Ids("SELECT id FROM msgq.q WHERE time_acked IS NOT NULL AND "
                "time_next IS NULL ORDER BY id"),
            (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE id = 6 AND time_acked IS "
                "NULL"),
            1);
  EXPECT_TRUE(first_status.ok()) << first_status.error_message();
  EXPECT_EQ(first_acked, 3);
  EXPECT_TRUE(second_status.ok()) << second_status.error_message();
  EXPECT_EQ(second_acked, 2);
}

// docs/api.md#the-grpc-service: "`ListTables` → ... cached/in-flight
// counts"; the proto:
// "in_flight: sent and not yet settled". msgq's "settled" is the ledger's
// (engine/queue/settlement_ledger.h): a sent id stays in flight until its
// postpone (or its ack) has committed in MySQL, and an id whose ack was
// accepted until that ack has committed. A row lock holds those writes
// back, so the count is exact: 5 sent -> 5 in flight, 0 cached; an ack of 3
// of them plus one never sent (6, scheduled) -> 6; the lock goes -> 0 in
// flight, 1-3 and 6 acked and 4-5 postponed in MySQL.
TEST_F(PromisesTest, InFlightCountsSendsAndAcksUntilTheyCommit) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_poller_interval=300,vt_ack_wait=300"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  ASSERT_NO_FATAL_FAILURE(Exec(
      absl::StrCat("INSERT INTO msgq.q (id, time_next, message) VALUES (6, ",
                   NowNanos() + 3600 * kSecond, ", '{}')")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  EXPECT_EQ(FindTable(stub_.get(), "q").in_flight(), 0);
  RowLock lock(db_.get(), "q", "id BETWEEN 1 AND 6");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(5, absl::Seconds(20)));
  EXPECT_THAT(s.ids(), ElementsAre("1", "2", "3", "4", "5"));
  v1::TableStatus t = FindTable(stub_.get(), "q");
  EXPECT_EQ(t.in_flight(), 5);
  EXPECT_EQ(t.cached(), 0);

  grpc::Status ack_status;
  int64_t acked = -1;
  std::thread acker([&] {
    ack_status = AckIds(stub_.get(), "q", {"1", "2", "3", "6"}, &acked);
  });
  // The ack is accepted (6 joins the ids in flight) but cannot commit.
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").in_flight() == 6; },
                 absl::Seconds(20)))
      << FindTable(stub_.get(), "q").in_flight();
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT NULL"), 0);
  lock.Release();
  acker.join();
  EXPECT_TRUE(ack_status.ok()) << ack_status.error_message();
  EXPECT_EQ(acked, 4);
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").in_flight() == 0; },
                 absl::Seconds(20)))
      << FindTable(stub_.get(), "q").in_flight();
  EXPECT_EQ(FindTable(stub_.get(), "q").cached(), 0);
  EXPECT_EQ(Ids("SELECT id FROM msgq.q WHERE time_acked IS NOT NULL ORDER BY "
                "id"),
            (std::vector<std::string>{"1", "2", "3", "6"}));
  EXPECT_EQ(Ids("SELECT id FROM msgq.q WHERE time_acked IS NULL AND epoch = 1 "
                "ORDER BY id"),
            (std::vector<std::string>{"4", "5"}));
}

// docs/architecture.md#where-msgq-differs-from-vitess-on-purpose: "A full
// cache triggers a re-poll as soon
// as it drains to half, not at the next interval"; MessageManager: "Refill
// before the cache runs dry, so subscribers never wait on a poll".
// vt_cache_size=10, a backlog of 48 rows, the interval poll 300 s away, and
// one subscriber that takes 8 rows and acks none (max_unacked=8). Once it
// has them (more than half a cache), the cache must be above half again
// while a backlog remains: refilled when it drained to half. Without the
// refill it would stay at 10 - 8 = 2 until the interval poll. Then a live
// subscriber gets every unsent row, with no interval poll in between.
//
// (Rows leaving the cache by SQL -- DELETE or an ack by UPDATE, seen in the
// binlog -- do not trigger the refill: the level is checked when msgqd sends
// (MessageManager::PumpLocked). Subscribers still never wait on the
// interval: the next send refills. Not asserted here.)
TEST_F(PromisesTest, FullCacheRefillsWhenDrainedToHalf) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q",
                  "vt_cache_size=10,vt_poller_interval=300,vt_batch_size=1,"
                  "vt_ack_wait=300"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog"));
  for (int from = 1; from <= 48; from += 12) {
    ASSERT_NO_FATAL_FAILURE(InsertPadded("q", from, from + 11, 100));
  }
  int64_t cached = 0;
  ASSERT_NO_FATAL_FAILURE(StartStuckSubscriber(MSGQ_CLI_PATH, *server_, *db_,
                                               "q", 8, &stuck_, &cached));
  const std::vector<std::string> unsent_ids =
      Ids("SELECT id FROM msgq.q WHERE epoch = 0");
  ASSERT_EQ(unsent_ids.size(), 40u);
  ASSERT_TRUE(Eventually(
      [&] {
        cached = FindTable(stub_.get(), "q").cached();
        return cached > 5;
      },
      absl::Seconds(30)))
      << "cache at " << cached << " of 10 after 8 sends, with a backlog of "
      << 40 - cached;
  EXPECT_LE(cached, 10);

  kill(stuck_, SIGKILL);
  waitpid(stuck_, nullptr, 0);
  stuck_ = 0;
  // The 8 rows the stuck client took come back only after their ack wait
  // (300 s), so exactly the 40 unsent ones arrive now, each once.
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(40, absl::Seconds(60)))
      << s.row_count() << " rows of 40";
  ASSERT_TRUE(Eventually(
      [&] { return Int("SELECT COUNT(*) FROM msgq.q WHERE epoch = 0") == 0; },
      absl::Seconds(20)));
  // A row inserted now comes after anything else the binlog or the cache
  // holds (in order, and due later): once it is here, nothing else came.
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 49, 49));
  ASSERT_TRUE(s.WaitForRows(41, absl::Seconds(20))) << s.row_count();
  std::vector<std::string> expected = unsent_ids;
  expected.push_back("49");
  EXPECT_THAT(s.ids(), UnorderedElementsAreArray(expected));
}

// docs/operations.md#start-stop-and-the-binlog: "(`binlog_row_image` FULL
// or NOBLOB). Otherwise msgqd
// logs one warning that names the reason and the fix, and polls."
TEST_F(PromisesTest, MinimalRowImageFallsBackToPollingWithOneWarning) {
  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL binlog_row_image = 'MINIMAL'"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.5"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(
      LogShows(*server_, "binlog_row_image is MINIMAL", absl::Seconds(20)))
      << server_->Log();
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  StreamCollector s(stub_.get(), "q");
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(20)));
  EXPECT_THAT(s.ids(), ElementsAre("1", "2", "3"));
  int64_t acked = 0;
  EXPECT_TRUE(AckIds(stub_.get(), "q", {"1", "2", "3"}, &acked).ok());
  EXPECT_EQ(acked, 3);
  const std::string log = server_->Log();
  EXPECT_THAT(log, HasSubstr("FULL or NOBLOB"));
  EXPECT_EQ(log.find("binlog_row_image is MINIMAL"),
            log.rfind("binlog_row_image is MINIMAL"))
      << log;
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
}

// docs/operations.md#start-stop-and-the-binlog: NOBLOB is a supported row
// image: msgqd follows the
// binlog and delivers at once (the interval poll is 300 s away), including
// a reschedule by SQL.
TEST_F(PromisesTest, NoblobRowImageIsFollowed) {
  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL binlog_row_image = 'NOBLOB'"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=300"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(WaitForDiscovery("q", "binlog"));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 1; },
                 absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(20)));
  ASSERT_NO_FATAL_FAILURE(Exec(
      absl::StrCat("INSERT INTO msgq.q (id, time_next, message) VALUES (3, ",
                   NowNanos() + 3600 * kSecond, ", '{}')")));
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("UPDATE msgq.q SET time_next = ", NowNanos(),
                        " WHERE id IN (3) AND time_acked IS NULL")));
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(20)));
  EXPECT_THAT(s.ids(), ElementsAre("1", "2", "3"));
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "binlog");
}

}  // namespace
}  // namespace msgq::testing
