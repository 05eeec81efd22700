// Tests of the C++ producer helper (msgq/producer.h) against a private
// MariaDB: the exact rows written, transactions that commit or roll back,
// the trace context columns, the errors, deduplicated enqueue and two
// producers racing on one dedup key.
#include "msgq/producer.h"

#include <mysql.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launch/owned_dir.h"
#include "tools/launch/private_mariadb.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

constexpr char kUuidV7[] =
    "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";
constexpr char kParent[] =
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

// A connection to the private MariaDB's database `app` (root over the
// socket); the producer's connection, and the test's for checking rows.
class Sql {
 public:
  explicit Sql(const std::string& socket, const char* db = "app") {
    mysql_ = mysql_init(nullptr);
    unsigned int protocol = MYSQL_PROTOCOL_SOCKET;
    mysql_optionsv(mysql_, MYSQL_OPT_PROTOCOL, &protocol);
    mysql_optionsv(mysql_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (mysql_real_connect(mysql_, "localhost", "root", "", db, 0,
                           socket.c_str(), 0) == nullptr) {
      ADD_FAILURE() << "connect " << socket << ": " << mysql_error(mysql_);
    }
  }
  ~Sql() { mysql_close(mysql_); }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  MYSQL* mysql() const { return mysql_; }

  // The rows of `sql` (NULL as "NULL"); none for a statement without.
  std::vector<std::vector<std::string>> Rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) {
      ADD_FAILURE() << sql << ": " << mysql_error(mysql_);
      return out;
    }
    MYSQL_RES* res = mysql_store_result(mysql_);
    if (res == nullptr) return out;
    const unsigned int n = mysql_num_fields(res);
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
      const unsigned long* len = mysql_fetch_lengths(res);
      std::vector<std::string>& r = out.emplace_back();
      for (unsigned int i = 0; i < n; ++i) {
        r.push_back(row[i] == nullptr ? "NULL" : std::string(row[i], len[i]));
      }
    }
    mysql_free_result(res);
    return out;
  }
  void Exec(const std::string& sql) { Rows(sql); }
  int64_t Int(const std::string& sql) {
    std::vector<std::vector<std::string>> rows = Rows(sql);
    int64_t v = -1;
    if (rows.size() != 1 || rows[0].size() != 1 ||
        !absl::SimpleAtoi(rows[0][0], &v)) {
      ADD_FAILURE() << sql << ": not one number";
    }
    return v;
  }

 private:
  MYSQL* mysql_;
};

// Every column the producer writes, as the conformance suite's producer
// table and schema/message_table_dedup.sql have them.
constexpr char kEventsDdl[] =
    "CREATE TABLE app.events (id varchar(36) NOT NULL, "
    "priority tinyint NOT NULL DEFAULT 50, epoch bigint NOT NULL DEFAULT 0, "
    "time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, "
    "message json, message_key varchar(255) DEFAULT NULL, "
    "message_type varchar(255) DEFAULT NULL, headers json, "
    "traceparent varchar(55) DEFAULT NULL, "
    "tracestate varchar(512) DEFAULT NULL, "
    "dedup_key varchar(255) DEFAULT NULL, "
    "time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000), "
    "PRIMARY KEY (id), UNIQUE KEY dedup_key (dedup_key), "
    "INDEX poller_idx (time_acked, priority, time_next)) "
    "COMMENT 'vitess_message,vt_ack_wait=30,msgq_dedup_window=3600'";

// The columns a message table needs, and no others.
constexpr char kPlainDdl[] =
    "CREATE TABLE app.plain (id varchar(36) NOT NULL, "
    "priority tinyint NOT NULL DEFAULT 50, epoch bigint NOT NULL DEFAULT 0, "
    "time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, "
    "message json, PRIMARY KEY (id), "
    "INDEX poller_idx (time_acked, priority, time_next)) "
    "COMMENT 'vitess_message,vt_ack_wait=30'";

class ProducerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
        launch::OwnedDir::Create("msgq-test-producer");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = dir->release();
    launch::PrivateMariaDb::Options o;
    o.source_dir = MSGQ_SOURCE_DIR;
    o.dir = dir_->path();
    o.durable = false;
    o.binlog = false;
    absl::StatusOr<std::unique_ptr<launch::PrivateMariaDb>> db =
        launch::PrivateMariaDb::Start(o);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = db->release();
  }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(db_, nullptr);
    {
      Sql root(db_->socket(), nullptr);
      root.Exec("DROP DATABASE IF EXISTS app");
      root.Exec("CREATE DATABASE app");
      root.Exec(kEventsDdl);
      root.Exec(kPlainDdl);
    }
    check_ = std::make_unique<Sql>(db_->socket());
    producer_ = std::make_unique<Sql>(db_->socket());
  }

  std::unique_ptr<Sql> Connect() {
    return std::make_unique<Sql>(db_->socket());
  }

  // The events rows: id, message, time_next, key, type, headers,
  // traceparent, tracestate, priority, dedup_key.
  std::vector<std::vector<std::string>> Events() {
    return check_->Rows(
        "SELECT id, message, time_next, message_key, message_type, headers, "
        "traceparent, tracestate, priority, dedup_key FROM events ORDER BY "
        "id");
  }

  static launch::OwnedDir* dir_;
  static launch::PrivateMariaDb* db_;
  std::unique_ptr<Sql> check_;
  std::unique_ptr<Sql> producer_;
};

launch::OwnedDir* ProducerTest::dir_ = nullptr;
launch::PrivateMariaDb* ProducerTest::db_ = nullptr;

TEST_F(ProducerTest, WritesEveryColumnOfOneMessage) {
  ScopedTraceContext trace(kParent, "vendor=a1");
  absl::StatusOr<std::string> id =
      Enqueue(producer_->mysql(), "events",
              {.body = R"({"order": 42})",
               .key = "customer-7",
               .type = "order.placed",
               .headers = {{{"source", "web"}, {"attempt", "1"}}},
               .columns = {{"priority", "10"}}});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_THAT(*id, MatchesRegex(kUuidV7));
  EXPECT_THAT(Events(), ElementsAre(ElementsAre(
                            *id, R"({"order": 42})", "0", "customer-7",
                            "order.placed", R"({"attempt":"1","source":"web"})",
                            kParent, "vendor=a1", "10", "NULL")));
}

TEST_F(ProducerTest, WritesOnlyTheGivenColumnsAndNoTraceWithoutAContext) {
  absl::StatusOr<std::string> id =
      Enqueue(producer_->mysql(), {"app", "events"}, {.id = "m1"});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "m1");
  EXPECT_THAT(Events(),
              ElementsAre(ElementsAre("m1", "NULL", "0", "NULL", "NULL", "NULL",
                                      "NULL", "NULL", "50", "NULL")));
}

TEST_F(ProducerTest, DelayIsMysqlNowPlusTheDelay) {
  const std::string now_ns =
      "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)";
  const int64_t before = check_->Int(now_ns);
  ASSERT_TRUE(Enqueue(producer_->mysql(), "events",
                      {.id = "later", .delay = absl::Seconds(10)})
                  .ok());
  const int64_t after = check_->Int(now_ns);
  const int64_t time_next =
      check_->Int("SELECT time_next FROM events WHERE id = 'later'");
  EXPECT_GE(time_next, before + 10'000'000'000);
  EXPECT_LE(time_next, after + 10'000'000'000);
}

TEST_F(ProducerTest, BatchIsOneInsertWithDefaultsWhereAMessageSetsNothing) {
  const std::vector<OutgoingMessage> batch = {
      {.body = "1", .id = "a"},
      {.body = "2", .id = "b", .key = "k", .columns = {{"priority", "1"}}},
      {.body = "3", .id = "c", .headers = {{}}}};
  absl::StatusOr<std::vector<std::string>> ids =
      EnqueueBatch(producer_->mysql(), "events", batch);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre("a", "b", "c"));
  EXPECT_THAT(Events(),
              ElementsAre(ElementsAre("a", "1", "0", "NULL", "NULL", "NULL",
                                      "NULL", "NULL", "50", "NULL"),
                          ElementsAre("b", "2", "0", "k", "NULL", "NULL",
                                      "NULL", "NULL", "1", "NULL"),
                          ElementsAre("c", "3", "0", "NULL", "NULL", "{}",
                                      "NULL", "NULL", "50", "NULL")));
  absl::StatusOr<std::vector<std::string>> none =
      EnqueueBatch(producer_->mysql(), "events", {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());
}

TEST_F(ProducerTest, GeneratedIdsAreDistinctUuidV7s) {
  absl::StatusOr<std::vector<std::string>> ids = EnqueueBatch(
      producer_->mysql(), "events", std::vector<OutgoingMessage>(3));
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 3u);
  for (const std::string& id : *ids) EXPECT_THAT(id, MatchesRegex(kUuidV7));
  EXPECT_NE((*ids)[0], (*ids)[1]);
  EXPECT_NE((*ids)[1], (*ids)[2]);
  EXPECT_EQ(check_->Int("SELECT COUNT(*) FROM events"), 3);
}

TEST_F(ProducerTest, IntegerIdTableTakesTheGivenId) {
  check_->Exec(
      "CREATE TABLE numbered (id bigint NOT NULL, time_next bigint DEFAULT "
      "0, time_acked bigint DEFAULT NULL, message json, PRIMARY KEY (id))");
  absl::StatusOr<std::string> id =
      Enqueue(producer_->mysql(), "numbered", {.body = "{}", .id = "17"});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "17");
  EXPECT_EQ(check_->Int("SELECT id FROM numbered"), 17);
  // A UUIDv7 is not an integer: MariaDB's strict mode refuses it.
  absl::StatusOr<std::string> uuid =
      Enqueue(producer_->mysql(), "numbered", {.body = "{}"});
  EXPECT_EQ(uuid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(uuid.status().message(),
            "MySQL error 1265: Data truncated for column 'id' at row 1");
}

TEST_F(ProducerTest, RolledBackTransactionWritesNothing) {
  producer_->Exec("BEGIN");
  ASSERT_TRUE(Enqueue(producer_->mysql(), "events", {.id = "gone"}).ok());
  EXPECT_EQ(check_->Int("SELECT COUNT(*) FROM events"), 0);  // not committed
  producer_->Exec("ROLLBACK");
  EXPECT_EQ(check_->Int("SELECT COUNT(*) FROM events"), 0);

  producer_->Exec("BEGIN");
  producer_->Exec("INSERT INTO plain (id) VALUES ('order-1')");
  ASSERT_TRUE(Enqueue(producer_->mysql(), "events", {.id = "kept"}).ok());
  EXPECT_EQ(check_->Int("SELECT COUNT(*) FROM events"), 0);
  producer_->Exec("COMMIT");
  EXPECT_THAT(check_->Rows("SELECT id FROM events"),
              ElementsAre(ElementsAre("kept")));
  EXPECT_THAT(check_->Rows("SELECT id FROM plain"),
              ElementsAre(ElementsAre("order-1")));
}

TEST_F(ProducerTest, TableWithoutTraceColumnsTakesTheMessageWithoutThem) {
  ScopedTraceContext trace(kParent, "vendor=a1");
  producer_->Exec("BEGIN");
  absl::StatusOr<std::string> id =
      Enqueue(producer_->mysql(), "plain", {.body = "{}", .id = "p"});
  ASSERT_TRUE(id.ok()) << id.status();
  producer_->Exec("COMMIT");
  EXPECT_THAT(check_->Rows("SELECT id, message, time_next FROM plain"),
              ElementsAre(ElementsAre("p", "{}", "0")));

  // traceparent alone: written, tracestate dropped.
  check_->Exec("ALTER TABLE plain ADD COLUMN traceparent varchar(55)");
  ASSERT_TRUE(Enqueue(producer_->mysql(), "plain", {.id = "q"}).ok());
  EXPECT_THAT(check_->Rows("SELECT traceparent FROM plain WHERE id = 'q'"),
              ElementsAre(ElementsAre(kParent)));
}

TEST_F(ProducerTest, TraceContextIsPerScopeAndOnlyValid) {
  {
    ScopedTraceContext outer(kParent);
    ASSERT_TRUE(CurrentTraceContext().has_value());
    EXPECT_EQ(CurrentTraceContext()->traceparent, kParent);
    {
      ScopedTraceContext invalid("00-not-a-traceparent");
      EXPECT_FALSE(CurrentTraceContext().has_value());
      ASSERT_TRUE(Enqueue(producer_->mysql(), "events", {.id = "x"}).ok());
    }
    ASSERT_TRUE(CurrentTraceContext().has_value());
    EXPECT_EQ(CurrentTraceContext()->traceparent, kParent);
    // A traceparent of the message's own wins over the current one.
    ASSERT_TRUE(Enqueue(producer_->mysql(), "events",
                        {.id = "y",
                         .columns = {{"traceparent",
                                      "00-11111111111111111111111111111111-"
                                      "2222222222222222-00"}}})
                    .ok());
  }
  EXPECT_FALSE(CurrentTraceContext().has_value());
  EXPECT_THAT(check_->Rows(
                  "SELECT id, traceparent, tracestate FROM events ORDER BY id"),
              ElementsAre(ElementsAre("x", "NULL", "NULL"),
                          ElementsAre("y",
                                      "00-11111111111111111111111111111111-"
                                      "2222222222222222-00",
                                      "NULL")));
}

TEST(TraceparentTest, ValidOnlyInW3CForm) {
  EXPECT_TRUE(IsValidTraceparent(kParent));
  EXPECT_FALSE(IsValidTraceparent(""));
  EXPECT_FALSE(IsValidTraceparent(
      "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"));
  EXPECT_FALSE(IsValidTraceparent(
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsValidTraceparent(
      "00-00000000000000000000000000000000-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsValidTraceparent(
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"));
  EXPECT_FALSE(IsValidTraceparent(
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-"));
}

TEST(UuidV7Test, MillisecondsThenRandomWithVersionAndVariant) {
  const std::vector<uint8_t> ones(10, 0xff);
  const std::vector<uint8_t> zeros(10, 0x00);
  const absl::Time t = absl::FromUnixMillis(0x0123456789ab);
  EXPECT_EQ(UuidV7(t, ones), "01234567-89ab-7fff-bfff-ffffffffffff");
  EXPECT_EQ(UuidV7(t, zeros), "01234567-89ab-7000-8000-000000000000");
  EXPECT_THAT(NewUuidV7(), MatchesRegex(kUuidV7));
  EXPECT_LT(UuidV7(t, ones), UuidV7(t + absl::Milliseconds(1), zeros));
}

TEST_F(ProducerTest, ArgumentErrorsComeBeforeAnyStatement) {
  auto error = [](const absl::Status& s) {
    return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
  };
  EXPECT_EQ(error(Enqueue(nullptr, "events", {}).status()),
            "INVALID_ARGUMENT: enqueue needs a connection (MYSQL*)");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), "ev ents", {}).status()),
            "INVALID_ARGUMENT: table \"ev ents\" is not a plain name "
            "(letters, digits, _ and $, 1 to 64)");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), {"a-b", "events"}, {}).status()),
            "INVALID_ARGUMENT: table \"a-b.events\" is not a plain name "
            "(letters, digits, _ and $, 1 to 64)");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), "events",
                          {.columns = {{"prio`rity", "1"}}})
                      .status()),
            "INVALID_ARGUMENT: message 0: column \"prio`rity\" is not a plain "
            "name");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), "events",
                          {.columns = {{"message_key", "k"}}})
                      .status()),
            "INVALID_ARGUMENT: message 0: column message_key is a field of "
            "OutgoingMessage, not one of columns");
  const std::vector<OutgoingMessage> batch = {{}, {.delay = -absl::Seconds(1)}};
  EXPECT_EQ(error(EnqueueBatch(producer_->mysql(), "events", batch).status()),
            "INVALID_ARGUMENT: message 1: delay -1s is not finite and >= 0");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), "events",
                          {.delay = absl::InfiniteDuration()})
                      .status()),
            "INVALID_ARGUMENT: message 0: delay inf is not finite and >= 0");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), "events",
                          {.headers = {{{"k", "\xff"}}}})
                      .status()),
            "INVALID_ARGUMENT: message 0: header \"k\" is not UTF-8");
  EXPECT_EQ(error(EnqueueDedup(producer_->mysql(), "events", {}).status()),
            "INVALID_ARGUMENT: message 0 has no dedup_key: EnqueueDedup needs "
            "one");
  EXPECT_EQ(check_->Int("SELECT COUNT(*) FROM events"), 0);
}

TEST_F(ProducerTest, DatabaseErrorsKeepTheTransactionGoing) {
  auto error = [](const absl::Status& s) {
    return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
  };
  producer_->Exec("BEGIN");
  ASSERT_TRUE(Enqueue(producer_->mysql(), "events", {.id = "one"}).ok());
  EXPECT_EQ(
      error(Enqueue(producer_->mysql(), "events", {.id = "one"}).status()),
      "ALREADY_EXISTS: MySQL error 1062: Duplicate entry 'one' for key "
      "'PRIMARY'");
  EXPECT_EQ(
      error(Enqueue(producer_->mysql(), "plain", {.key = "k"}).status()),
      "FAILED_PRECONDITION: MySQL error 1054: Unknown column 'message_key' "
      "in 'INSERT INTO'");
  EXPECT_EQ(error(Enqueue(producer_->mysql(), "missing", {}).status()),
            "NOT_FOUND: MySQL error 1146: Table 'app.missing' doesn't exist");
  EXPECT_EQ(
      error(Enqueue(producer_->mysql(), "events", {.id = std::string(37, 'x')})
                .status()),
      "INVALID_ARGUMENT: MySQL error 1406: Data too long for column "
      "'id' at row 1");
  producer_->Exec("COMMIT");
  EXPECT_THAT(check_->Rows("SELECT id FROM events"),
              ElementsAre(ElementsAre("one")));
}

TEST_F(ProducerTest, DedupInsertsOncePerKey) {
  absl::StatusOr<Enqueued> first =
      EnqueueDedup(producer_->mysql(), "events",
                   {.body = "1", .id = "first", .dedup_key = "order-42-paid"});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, (Enqueued{"first", false}));
  absl::StatusOr<Enqueued> again =
      EnqueueDedup(producer_->mysql(), "events",
                   {.body = "2", .id = "second", .dedup_key = "order-42-paid"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, (Enqueued{"first", true}));

  const std::vector<OutgoingMessage> batch = {
      {.id = "a", .dedup_key = "k1"},
      {.id = "b", .dedup_key = "order-42-paid"},
      {.id = "c", .dedup_key = "k1"}};
  absl::StatusOr<std::vector<Enqueued>> out =
      EnqueueDedupBatch(producer_->mysql(), "events", batch);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, ElementsAre(Enqueued{"a", false}, Enqueued{"first", true},
                                Enqueued{"a", true}));
  EXPECT_THAT(
      check_->Rows("SELECT id, message, dedup_key FROM events ORDER BY id"),
      ElementsAre(ElementsAre("a", "NULL", "k1"),
                  ElementsAre("first", "1", "order-42-paid")));

  // Enqueue given a taken key fails as plain SQL does.
  absl::StatusOr<std::string> plain =
      Enqueue(producer_->mysql(), "events", {.id = "third", .dedup_key = "k1"});
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(plain.status().message(),
            "MySQL error 1062: Duplicate entry 'k1' for key 'dedup_key'");
  // An id a row with another key holds: nothing inserted, and said so.
  absl::StatusOr<Enqueued> taken = EnqueueDedup(producer_->mysql(), "events",
                                                {.id = "a", .dedup_key = "k2"});
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(taken.status().message(),
            "message 0: id \"a\" is taken by a row without dedup_key \"k2\": "
            "nothing was inserted for it");
  EXPECT_EQ(check_->Int("SELECT COUNT(*) FROM events"), 2);
}

// Two producers enqueue one key at once: the second waits for the first's
// lock and is a duplicate if the first commits, the one row if it rolls
// back.
class ProducerRaceTest : public ProducerTest,
                         public ::testing::WithParamInterface<bool> {};

TEST_P(ProducerRaceTest, OneRowPerKey) {
  const bool first_commits = GetParam();
  std::unique_ptr<Sql> other = Connect();
  producer_->Exec("BEGIN");
  other->Exec("BEGIN");
  absl::StatusOr<Enqueued> first = EnqueueDedup(
      producer_->mysql(), "events", {.id = "first", .dedup_key = "race"});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, (Enqueued{"first", false}));

  absl::StatusOr<Enqueued> second = absl::UnknownError("not run");
  std::thread racer([&] {
    second = EnqueueDedup(other->mysql(), "events",
                          {.id = "second", .dedup_key = "race"});
  });
  // Until the second INSERT waits for the first transaction's lock. The
  // server's live count of row lock waits, not information_schema.INNODB_TRX:
  // InnoDB refreshes that table's snapshot only when nobody read it for
  // 100 ms, so polling it faster than that returns the first snapshot taken
  // (before the wait began) for as long as the polling lasts. The server is
  // this test's own, so the one wait is the second INSERT's.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  bool waiting = false;
  while (!(waiting = check_->Int("SELECT VARIABLE_VALUE FROM "
                                 "information_schema.GLOBAL_STATUS WHERE "
                                 "VARIABLE_NAME = "
                                 "'INNODB_ROW_LOCK_CURRENT_WAITS'") == 1) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(waiting) << "the second INSERT never waited for the lock";
  producer_->Exec(first_commits ? "COMMIT" : "ROLLBACK");
  racer.join();
  ASSERT_TRUE(second.ok()) << second.status();
  other->Exec("COMMIT");
  if (first_commits) {
    EXPECT_EQ(*second, (Enqueued{"first", true}));
    EXPECT_THAT(check_->Rows("SELECT id, dedup_key FROM events"),
                ElementsAre(ElementsAre("first", "race")));
  } else {
    EXPECT_EQ(*second, (Enqueued{"second", false}));
    EXPECT_THAT(check_->Rows("SELECT id, dedup_key FROM events"),
                ElementsAre(ElementsAre("second", "race")));
  }
}

INSTANTIATE_TEST_SUITE_P(FirstCommitsOrRollsBack, ProducerRaceTest,
                         ::testing::Bool());

}  // namespace
}  // namespace msgq
