// Delivery end to end: a real MariaDB, a real msgqd, real gRPC streams.
// Each test comment numbers the delivery behaviour it covers.
#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tests/wait_events.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// The ids from..to as the strings a stream carries.
std::set<std::string> IdSet(int from, int to) {
  std::set<std::string> ids;
  for (int i = from; i <= to; ++i) ids.insert(std::to_string(i));
  return ids;
}

class DeliveryTest : public MsgqTest {
 protected:
  int64_t Int(const std::string& sql) {
    int64_t v = 0;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }
  void AckAll(StreamCollector& s, const std::string& table) {
    int64_t acked;
    ASSERT_TRUE(AckIds(stub_.get(), table, s.ids(), &acked).ok());
  }
};

// 1. Only committed inserts are delivered, once committed.
TEST_F(DeliveryTest, DeliversCommittedInsertsOnly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.1"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));

  auto txn = db_->Connect();
  ASSERT_TRUE(txn.ok());
  ASSERT_TRUE((*txn)->Execute("BEGIN").ok());
  ASSERT_TRUE((*txn)
                  ->Execute("INSERT INTO msgq.q (id, message) VALUES (1, '{}')")
                  .ok());
  auto rolled = db_->Connect();
  ASSERT_TRUE(rolled.ok());
  ASSERT_TRUE((*rolled)->Execute("BEGIN").ok());
  ASSERT_TRUE((*rolled)
                  ->Execute("INSERT INTO msgq.q (id, message) VALUES (2, '{}')")
                  .ok());
  // Several polls pass; nothing uncommitted may arrive.
  EXPECT_FALSE(s.WaitForRows(1, absl::Seconds(1)));
  ASSERT_TRUE((*rolled)->Execute("ROLLBACK").ok());
  ASSERT_TRUE((*txn)->Execute("COMMIT").ok());
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  EXPECT_FALSE(s.WaitForRows(2, absl::Seconds(1)));
  EXPECT_THAT(s.ids(), ElementsAre("1"));
}

// 2. Lower priority first, then older time_next, then id.
TEST_F(DeliveryTest, OrdersByPriorityThenTimeNextThenId) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_batch_size=1"));
  const int64_t t = NowNanos() - 1'000'000'000;
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "INSERT INTO msgq.q (id, priority, time_next) VALUES "
      "(1, 50, ",
      t + 3, "), (2, 10, ", t + 9, "), (3, 50, ", t + 1, "), ", "(4, 10, ",
      t + 9, "), (5, 90, ", t, "), (6, 50, ", t + 1, ")")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(6, absl::Seconds(10)));
  EXPECT_THAT(s.ids(), ElementsAre("2", "4", "3", "6", "1", "5"));
  for (const auto& r : s.responses()) EXPECT_LE(r.rows_size(), 1);
}

// 3. Fields first (id first), then 1..batch_size rows per response.
TEST_F(DeliveryTest, StreamShapeFieldsThenBoundedBatches) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_batch_size=3", "tenant varchar(10), extra int"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("subset", "vt_message_cols=id|extra",
                                      "tenant varchar(10), extra int"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.q (id, message, tenant, extra) VALUES "
           "(1, '{\"a\": 1}', 'x', NULL), (2, NULL, 'y', 7)"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 3, 10));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.subset (id, extra) VALUES (1, 42)"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(10, absl::Seconds(10)));
  auto responses = s.responses();
  ASSERT_GE(responses.size(), 5u);
  ASSERT_EQ(responses[0].rows_size(), 0);
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& f : responses[0].fields())
    fields.emplace_back(f.name(), f.type());
  EXPECT_THAT(fields, ElementsAre(std::make_pair("id", "bigint"),
                                  std::make_pair("message", "longtext"),
                                  std::make_pair("tenant", "varchar"),
                                  std::make_pair("extra", "int")));
  for (size_t i = 1; i < responses.size(); ++i) {
    EXPECT_EQ(responses[i].fields_size(), 0);
    EXPECT_GE(responses[i].rows_size(), 1);
    EXPECT_LE(responses[i].rows_size(), 3);
  }
  const v1::Row& first = responses[1].rows(0);
  EXPECT_EQ(RowValue(first, 0), "1");
  EXPECT_EQ(RowValue(first, 1), "{\"a\": 1}");
  EXPECT_EQ(RowValue(first, 2), "x");
  EXPECT_EQ(RowValue(first, 3), "<NULL>");
  EXPECT_EQ(first.lengths(3), -1);

  StreamCollector sub(stub_.get(), "subset");
  ASSERT_TRUE(sub.WaitForRows(1, absl::Seconds(10)));
  auto sr = sub.responses();
  ASSERT_EQ(sr[0].fields_size(), 2);
  EXPECT_EQ(sr[0].fields(0).name(), "id");
  EXPECT_EQ(sr[0].fields(1).name(), "extra");
  EXPECT_EQ(RowValue(sr[1].rows(0), 1), "42");
}

// 4. Round-robin, not broadcast: each message goes to exactly one subscriber.
TEST_F(DeliveryTest, RoundRobinAcrossSubscribersWithoutDuplicates) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_batch_size=1,vt_poller_interval=0.2"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector a(stub_.get(), "q"), b(stub_.get(), "q"), c(stub_.get(), "q");
  ASSERT_TRUE(a.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(b.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(c.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 3; },
                 absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 60));
  ASSERT_TRUE(Eventually(
      [&] { return a.row_count() + b.row_count() + c.row_count() >= 60; },
      absl::Seconds(20)));
  EXPECT_FALSE(a.WaitForRows(a.row_count() + 1, absl::Milliseconds(500)));
  std::vector<std::string> all;
  for (auto* s : {&a, &b, &c}) {
    // Each gets a share; how big depends on how fast its writes complete
    // (busy streams are skipped), so the exact turn order is asserted in
    // MessageManagerTest's round-robin tests, not here.
    EXPECT_GE(s->row_count(), 1u) << "a subscriber was starved";
    auto ids = s->ids();
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end(),
            [](const std::string& x, const std::string& y) {
              return std::stoi(x) < std::stoi(y);
            });
  std::vector<std::string> expected;
  for (int i = 1; i <= 60; ++i) expected.push_back(std::to_string(i));
  EXPECT_THAT(all, ElementsAreArray(expected));
}

// 5. Ack: counts rows that went unacked -> acked; acked rows never come back;
// a plain UPDATE acks too.
TEST_F(DeliveryTest, AckCountsAndStopsRedelivery) {
  // Row 3 comes back 3.5 s after its send: time enough, on a loaded
  // machine, for the acks of 1 and 2 to commit before they would too.
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q",
                  "vt_ack_wait=3,vt_min_backoff=0.5,vt_max_backoff=0.5,"
                  "vt_poller_interval=0.2"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 4));
  const int64_t now = NowNanos();
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("UPDATE msgq.q SET time_acked = ", now,
                        ", time_next = NULL WHERE id = 4")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(10)));
  int64_t acked = -1;
  ASSERT_TRUE(AckIds(stub_.get(), "q", {"1", "2", "999"}, &acked).ok());
  EXPECT_EQ(acked, 2);
  ASSERT_TRUE(AckIds(stub_.get(), "q", {"1", "002"}, &acked).ok());
  EXPECT_EQ(acked, 0);
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE id IN (1,2) AND "
                        "time_acked >= " +
                        std::to_string(now) + " AND time_next IS NULL"),
            "2");
  // Only 3 (unacked) comes back after its backoff; 1, 2 and 4 never do.
  ASSERT_TRUE(s.WaitForRows(4, absl::Seconds(10)));
  // Anything more in the next 8 s (two resends of 3) must be 3 again.
  (void)s.WaitForRows(6, absl::Seconds(8));
  const std::vector<std::string> ids = s.ids();
  ASSERT_GE(ids.size(), 4u);
  EXPECT_THAT(std::vector<std::string>(ids.begin(), ids.begin() + 4),
              ElementsAre("1", "2", "3", "3"));
  for (size_t i = 4; i < ids.size(); ++i) EXPECT_EQ(ids[i], "3") << i;
}

// 6. Every send is postponed: epoch + 1 and time_next = now + ack_wait +
// clamp(min_backoff * 2^epoch * jitter); unacked messages are resent.
TEST_F(DeliveryTest, RedeliversWithExponentialBackoff) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q",
                  "vt_ack_wait=1,vt_min_backoff=0.5,vt_max_backoff=1.5,"
                  "vt_poller_interval=30"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const int64_t before = NowNanos();
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return Int("SELECT epoch FROM msgq.q") == 1; },
                         absl::Seconds(5)));
  const int64_t after = NowNanos();
  const int64_t t1 = Int("SELECT time_next FROM msgq.q");
  // epoch 0: backoff = clamp(0.5 s * [0.666, 1.333), 0.5 s, 1.5 s), so
  // time_next = send time + 1 s + [0.5, 0.667) s.
  EXPECT_GE(t1, before + 1'500'000'000LL);
  EXPECT_LE(t1, after + 1'667'000'000LL);

  // Redelivered once due, long before the 30 s poll; epoch 2 next.
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(10)));
  const int64_t second = NowNanos();
  EXPECT_GE(second, t1);
  ASSERT_TRUE(Eventually([&] { return Int("SELECT epoch FROM msgq.q") == 2; },
                         absl::Seconds(5)));
  const int64_t second_postponed = NowNanos();
  const int64_t t2 = Int("SELECT time_next FROM msgq.q");
  // epoch 1: clamp(0.5 * 2 * jitter) in [0.666, 1.333) s, max 1.5, from a
  // postpone written no earlier than t1 and before its epoch showed (the
  // postpone's round may come after the resend reached the client).
  EXPECT_GE(t2, t1 + 1'000'000'000LL + 666'000'000LL);
  EXPECT_LE(t2 - second_postponed, 1'000'000'000LL + 1'333'000'000LL);
  // epoch 2 would be 0.5 * 4 * jitter >= 1.33 -> up to the 1.5 s max.
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return Int("SELECT epoch FROM msgq.q") == 3; },
                         absl::Seconds(5)));
  const int64_t third = NowNanos();
  const int64_t t3 = Int("SELECT time_next FROM msgq.q");
  EXPECT_LE(t3 - third, 1'000'000'000LL + 1'500'000'000LL);
  EXPECT_THAT(s.ids(), ElementsAre("1", "1", "1"));
}

// 7. Future messages are delivered on time, whatever vt_poller_interval:
// msgq learns of the message at the first subscriber's poll, and sends it
// when it becomes due, not 30 s later at the next interval poll.
TEST_F(DeliveryTest, ScheduledMessageArrivesWhenDueNotAtNextPoll) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=30"));
  const int64_t due = NowNanos() + 3'000'000'000LL;
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("INSERT INTO msgq.q (id, message, time_next) VALUES "
                        "(1, '{}', ",
                        due, "), (2, '{}', ", due + 1'000'000'000LL, ")")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  // Lateness counts from the later of the due time and the subscription (a
  // loaded machine may start msgqd after `due`).
  const int64_t subscribed = NowNanos();
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  const int64_t first = NowNanos();
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(10)));
  const int64_t second = NowNanos();
  EXPECT_THAT(s.ids(), ElementsAre("1", "2"));
  EXPECT_GE(first, due);
  EXPECT_GE(second, due + 1'000'000'000LL);
  // The 200 ms goal is measured by the benchmark; allow a loaded CI machine
  // slack here (5 s) while still failing on "waited for the next poll"
  // (30 s).
  const int64_t from1 = std::max(due, subscribed);
  const int64_t from2 = std::max<int64_t>(due + 1'000'000'000LL, first);
  EXPECT_LE(first - from1, 5'000'000'000LL) << "late by " << (first - from1);
  std::printf("scheduled delivery late by %.1f ms and %.1f ms\n",
              (first - from1) / 1e6, (second - from2) / 1e6);
  EXPECT_LE(second - from2, 5'000'000'000LL);
}

// 8. A full cache is refilled as soon as it drains, not at the next interval.
TEST_F(DeliveryTest, SmallCacheDrainsLargeBacklogQuickly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "q", "vt_cache_size=100,vt_poller_interval=30,vt_batch_size=10"));
  const int n = 10000;
  for (int from = 1; from <= n; from += 1000)
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", from, from + 999));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  int64_t max_cached = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        max_cached = std::max(max_cached, FindTable(stub_.get(), "q").cached());
        return s.row_count() >= static_cast<size_t>(n);
      },
      absl::Seconds(25)))
      << "only " << s.row_count() << " delivered";
  EXPECT_LE(max_cached, 100);
  std::set<std::string> unique;
  for (const auto& id : s.ids()) unique.insert(id);
  EXPECT_EQ(unique, IdSet(1, n));
}

// 9. No subscribers, no polls; the first subscriber polls at once.
TEST_F(DeliveryTest, NoPollQueriesWithoutSubscribers) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.1"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  // The clock: a table of the same interval with a subscriber, so its
  // polls count the intervals that pass.
  ASSERT_NO_FATAL_FAILURE(CreateTable("clock", "vt_poller_interval=0.1"));
  // Rows read from the message table itself (user statistics), not
  // Com_select: msgqd's other threads may query other things meanwhile.
  ASSERT_NO_FATAL_FAILURE(Exec("SET GLOBAL userstat = 1"));
  // Without the exact counts' counting reads, which read the table (by
  // index) at load and again once the binlog streams, whether anyone
  // subscribes or not.
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--schema_reload_interval=1h", "--exact_counts=false"}));
  StreamCollector clock(stub_.get(), "clock");
  ASSERT_TRUE(clock.WaitForFields(absl::Seconds(10)));
  auto rows_read = [&] {
    return Int(
        "SELECT COALESCE(SUM(ROWS_READ), 0) FROM "
        "information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = 'msgq' AND "
        "TABLE_NAME = 'q'");
  };
  const int64_t before = rows_read();
  // Ten poll intervals, counted by the clock's polls.
  ASSERT_TRUE(WaitForPolls(stub_.get(), "clock",
                           Polls(stub_.get(), "clock") + 10,
                           absl::Seconds(20)));
  EXPECT_EQ(rows_read() - before, 0);
  EXPECT_EQ(Polls(stub_.get(), "q"), 0);
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(3, absl::Seconds(5)));
  EXPECT_GE(rows_read() - before, 3);
}

// 10. Acked rows older than vt_purge_after are deleted; unacked never.
TEST_F(DeliveryTest, PurgesOldAckedRowsOnly) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_purge_after=6,vt_poller_interval=0.1"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1200));
  const int64_t old = NowNanos() - 60'000'000'000LL;
  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("UPDATE msgq.q SET time_acked = ", old,
                        ", time_next = NULL WHERE id <= 1100")));
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "UPDATE msgq.q SET time_next = ", NowNanos() + 3'600'000'000'000LL,
      " WHERE id > 1100")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // 1100 rows need several bounded DELETEs (500 per statement).
  ASSERT_TRUE(
      Eventually([&] { return Int("SELECT COUNT(*) FROM msgq.q") == 100; },
                 absl::Seconds(20)));
  EXPECT_EQ(Int("SELECT MIN(id) FROM msgq.q"), 1101);
  // A freshly acked row survives until it is older than vt_purge_after
  // (6 s): ten poll intervals later (a purge step each; a subscriber makes
  // them show as polls, none of the rows left being due) it is still there
  // -- checked only when the check itself ran inside those 6 s (a stalled
  // machine could take longer, and then the row may rightly be gone).
  StreamCollector subscriber(stub_.get(), "q");
  ASSERT_TRUE(subscriber.WaitForFields(absl::Seconds(10)));
  const absl::Time acked_at = absl::Now();
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "UPDATE msgq.q SET time_acked = ", absl::ToUnixNanos(acked_at),
      ", time_next = NULL WHERE id = 1101")));
  ASSERT_TRUE(WaitForPolls(stub_.get(), "q", Polls(stub_.get(), "q") + 10,
                           absl::Seconds(20)));
  EXPECT_EQ(subscriber.row_count(), 0u);
  const int64_t kept = Int("SELECT COUNT(*) FROM msgq.q WHERE id = 1101");
  if (absl::Now() - acked_at < absl::Seconds(6)) {
    EXPECT_EQ(kept, 1);
  } else {
    std::printf("too slow to tell whether the row was kept\n");
  }
  ASSERT_TRUE(
      Eventually([&] { return Int("SELECT COUNT(*) FROM msgq.q") == 99; },
                 absl::Seconds(20)));
}

// 11. A subscriber that leaves is removed at once; its messages go to others
// after their time_next.
TEST_F(DeliveryTest, LeavingSubscriberIsRemovedAndItsMessagesMoveOn) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=1,vt_poller_interval=30"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto a = std::make_unique<StreamCollector>(stub_.get(), "q");
  ASSERT_TRUE(a->WaitForRows(1, absl::Seconds(10)));
  EXPECT_EQ(FindTable(stub_.get(), "q").subscribers(), 1);
  a.reset();  // cancels
  EXPECT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").subscribers() == 0; },
                 absl::Seconds(5)));
  StreamCollector b(stub_.get(), "q");
  ASSERT_TRUE(b.WaitForRows(1, absl::Seconds(10)));
  EXPECT_THAT(b.ids(), ElementsAre("1"));
}

// 12. MySQL going away loses nothing and needs no restart.
TEST_F(DeliveryTest, SurvivesMysqlRestartWithoutLoss) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=1,vt_poller_interval=0.5"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 50));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(50, absl::Seconds(10)));
  AckAll(s, "q");
  ASSERT_TRUE(db_->Stop().ok());
  int64_t acked;
  EXPECT_EQ(AckIds(stub_.get(), "q", {"1"}, &acked).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(db_->Restart().ok());
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 51, 100));
  // The open stream carries on (it may also have ended with UNAVAILABLE, and
  // a client would reconnect): everything inserted after the restart, and
  // anything not acked before it, arrives without restarting msgqd.
  std::set<std::string> got;
  std::vector<std::string> unacked;
  size_t seen = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL") > 0 &&
         absl::Now() < deadline) {
    s.WaitForRows(seen + 1, absl::Milliseconds(500));
    auto ids = s.ids();
    std::vector<std::string> fresh(ids.begin() + seen, ids.end());
    seen = ids.size();
    for (const auto& id : fresh) got.insert(id);
    // An ack may fail while msgqd reconnects: keep it for the next round.
    unacked.insert(unacked.end(), fresh.begin(), fresh.end());
    if (!unacked.empty() && AckIds(stub_.get(), "q", unacked, &acked).ok()) {
      unacked.clear();
    }
  }
  EXPECT_FALSE(s.WaitForEnd(absl::Milliseconds(1)))
      << "stream ended: " << s.status().error_message();
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"), 0);
  EXPECT_EQ(got, IdSet(1, 100));
}

// 13. kill -9 of msgqd loses nothing: unacked messages are delivered again.
TEST_F(DeliveryTest, KillNineThenRestartRedeliversEverythingUnacked) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=1,vt_poller_interval=30,vt_batch_size=5"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 500));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::set<std::string> unacked = IdSet(1, 500);
  {
    StreamCollector s(stub_.get(), "q");
    ASSERT_TRUE(s.WaitForRows(100, absl::Seconds(10)));
    auto ids = s.ids();
    ids.resize(100);
    int64_t acked;
    ASSERT_TRUE(AckIds(stub_.get(), "q", ids, &acked).ok());
    EXPECT_EQ(acked, 100);
    for (const auto& id : ids) unacked.erase(id);
    server_->Kill();
  }
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(400, absl::Seconds(20)));
  std::set<std::string> got;
  for (const auto& id : s.ids()) got.insert(id);
  EXPECT_EQ(got, unacked);
  int64_t acked;
  ASSERT_TRUE(AckIds(stub_.get(), "q", s.ids(), &acked).ok());
  EXPECT_EQ(acked, 400);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"), 0);
}

// 14. Several databases, each table with its own settings, by keyspace.
TEST_F(DeliveryTest, ServesTablesOfSeveralDatabases) {
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE DATABASE other"));
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("t", MessageComment("vt_batch_size=2"))));
  ASSERT_NO_FATAL_FAILURE(Exec("USE other"));
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("t", MessageComment("vt_batch_size=5"))));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.t (id, message) VALUES (1, '\"m\"')"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO other.t (id, message) VALUES (2, '\"o\"')"));
  ASSERT_NO_FATAL_FAILURE(StartServer({"--databases=msgq,other"}));
  EXPECT_EQ(FindTable(stub_.get(), "t", "msgq").settings().batch_size(), 2);
  EXPECT_EQ(FindTable(stub_.get(), "t", "other").settings().batch_size(), 5);
  StreamCollector def(stub_.get(), "t");
  StreamCollector other(stub_.get(), "t", "other");
  ASSERT_TRUE(def.WaitForRows(1, absl::Seconds(10)));
  ASSERT_TRUE(other.WaitForRows(1, absl::Seconds(10)));
  EXPECT_THAT(def.ids(), ElementsAre("1"));
  EXPECT_THAT(other.ids(), ElementsAre("2"));
  int64_t acked;
  ASSERT_TRUE(AckIds(stub_.get(), "t", {"2"}, &acked, "other").ok());
  EXPECT_EQ(acked, 1);
  ASSERT_TRUE(AckIds(stub_.get(), "t", {"2"}, &acked, "msgq").ok());
  EXPECT_EQ(acked, 0);
}

// docs/operations.md#msgqd-flags: --binlog=false turns instant delivery
// off; the table says so ("poll" in ListTables) and the poll still delivers.
TEST_F(DeliveryTest, BinlogFalsePollsAndListTablesSaysSo) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.5"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  EXPECT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "q").discovery() == "binlog"; },
      absl::Seconds(10)))
      << FindTable(stub_.get(), "q").discovery();
  EXPECT_EQ(server_->Terminate(), 0);

  ASSERT_NO_FATAL_FAILURE(StartServer({"--binlog=false"}));
  ASSERT_TRUE(
      Eventually([&] { return FindTable(stub_.get(), "q").name() == "q"; },
                 absl::Seconds(10)));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  EXPECT_THAT(s.ids(), ElementsAre("1"));
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "poll");
}

}  // namespace
}  // namespace msgq::testing
