// Deduplicated enqueue (docs/tables.md#deduplicated-enqueue): a table with
// msgq_dedup_window loads only with a dedup_key column that has a unique
// index of its own (each refusal's exact error), MySQL gives a duplicate
// INSERT error 1062 and lets exactly one of two racing producers in, and
// msgqd's purge keeps acked and dead rows whose key is still in its window
// while deleting the others (end to end, and the store's purges at fixed
// times).
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/barrier.h"
#include "engine/sql/mysql_connection.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tests/store_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;

constexpr unsigned int kErDupEntry = 1062;
constexpr int64_t kSecond = 1'000'000'000;

// A dedup table's columns and index, for MessageTableDdl.
constexpr char kDedupColumns[] =
    "dedup_key varchar(64) DEFAULT NULL, time_created bigint DEFAULT NULL, "
    "time_dead bigint DEFAULT NULL, UNIQUE KEY dedup_key (dedup_key)";

// The ids of msgq.`table`'s rows, in id order.
std::vector<std::string> Ids(PrivateMariaDb& db, const std::string& table) {
  auto r =
      db.Query(absl::StrCat("SELECT id FROM msgq.`", table, "` ORDER BY id"));
  std::vector<std::string> out;
  if (!r.ok()) {
    ADD_FAILURE() << r.status();
    return out;
  }
  for (const auto& row : r->rows) out.push_back(row[0].value_or("NULL"));
  return out;
}

class DedupTest : public MsgqTest {};

TEST_F(DedupTest, TablesWithoutAUniqueDedupKeyFailWithPreciseErrors) {
  const std::string comment = MessageComment("msgq_dedup_window=60");
  const std::string fix =
      "; add UNIQUE KEY dedup_key (dedup_key) so that MySQL refuses a second "
      "row with the same key";
  struct Bad {
    std::string name;
    std::string columns;
    std::string cause;
  };
  const std::vector<Bad> bad = {
      {"no_column", "time_created bigint",
       "msgq_dedup_window needs a dedup_key column (varchar or varbinary, "
       "NULL = not deduplicated) with a unique index of its own"},
      {"no_index", "dedup_key varchar(64), time_created bigint",
       "column dedup_key has no unique index" + fix},
      {"plain_index",
       "dedup_key varchar(64), time_created bigint, INDEX (dedup_key)",
       "column dedup_key has no unique index of its own (its index is not "
       "unique or spans more columns)" +
           fix},
      // Unique pairs, not keys: the same key with another time_created
      // would pass.
      {"composite",
       "dedup_key varchar(64), time_created bigint, "
       "UNIQUE KEY (dedup_key, time_created)",
       "column dedup_key has no unique index of its own (its index is not "
       "unique or spans more columns)" +
           fix},
      {"not_text",
       "dedup_key bigint, time_created bigint, UNIQUE KEY (dedup_key)",
       "column dedup_key is bigint(20); msgq needs char, varchar, binary or "
       "varbinary"},
      {"no_created", "dedup_key varchar(64), UNIQUE KEY (dedup_key)",
       "msgq_dedup_window needs a time_created column (bigint, Unix ns of "
       "the enqueue; the window counts from it)"},
  };
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  for (const Bad& b : bad) {
    ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl(b.name, comment, b.columns)));
  }
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("good", comment, kDedupColumns)));
  // Without the directive, dedup_key is the application's column.
  ASSERT_NO_FATAL_FAILURE(
      Exec(MessageTableDdl("plain", MessageComment(), "dedup_key json")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.name);
    v1::TableStatus t = FindTable(stub_.get(), b.name);
    EXPECT_FALSE(t.loaded());
    EXPECT_EQ(t.error(),
              absl::StrCat("table `msgq`.`", b.name, "`: ", b.cause));
  }
  for (const char* name : {"good", "plain"}) {
    v1::TableStatus t = FindTable(stub_.get(), name);
    EXPECT_TRUE(t.loaded()) << name << ": " << t.error();
  }
}

TEST_F(DedupTest, SchemaDirectoryDdlLoads) {
  std::ifstream in(std::string(MSGQ_SOURCE_DIR) +
                   "/schema/message_table_dedup.sql");
  std::stringstream ddl;
  ddl << in.rdbuf();
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(ddl.str()));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::TableStatus t = FindTable(stub_.get(), "demo_dedup");
  EXPECT_TRUE(t.loaded()) << t.error();
  ASSERT_NO_FATAL_FAILURE(Exec(
      "INSERT INTO demo_dedup (id, dedup_key) VALUES ('a', 'order-42-paid')"));
  absl::Status dup = db_->Exec(
      "INSERT INTO demo_dedup (id, dedup_key) VALUES ('b', 'order-42-paid')");
  EXPECT_EQ(MysqlErrorCode(dup), kErDupEntry) << dup;
}

// What plain SQL gets: error 1062 for a key already committed, and, for
// two transactions inserting one key, the second waits for the first and
// gets 1062 when it commits or inserts when it rolls back.
TEST_F(DedupTest, DuplicateInsertGetsDuplicateKeyErrorAfterTheFirstCommits) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl(
      "q", MessageComment("msgq_dedup_window=60"), kDedupColumns)));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.q (id, dedup_key) VALUES (1, 'a')"));
  absl::Status dup =
      db_->Exec("INSERT INTO msgq.q (id, dedup_key) VALUES (2, 'a')");
  EXPECT_EQ(MysqlErrorCode(dup), kErDupEntry) << dup;

  auto first = db_->Connect();
  auto second = db_->Connect();
  ASSERT_TRUE(first.ok() && second.ok());
  for (const bool commit : {true, false}) {
    SCOPED_TRACE(commit ? "first commits" : "first rolls back");
    const std::string key = commit ? "'b'" : "'c'";
    const int id = commit ? 10 : 20;  // the first's; the second's is id + 1
    ASSERT_TRUE((*first)->Execute("BEGIN").ok());
    ASSERT_TRUE((*first)
                    ->Execute(absl::StrCat(
                        "INSERT INTO msgq.q (id, dedup_key) VALUES (", id, ", ",
                        key, ")"))
                    .ok());
    absl::Status second_insert;
    std::thread racer([&] {
      second_insert = (*second)
                          ->Execute(absl::StrCat(
                              "INSERT INTO msgq.q (id, dedup_key) VALUES (",
                              id + 1, ", ", key, ")"))
                          .status();
    });
    const absl::Status ended =
        (*first)->Execute(commit ? "COMMIT" : "ROLLBACK").status();
    racer.join();
    ASSERT_TRUE(ended.ok()) << ended;
    if (commit) {
      EXPECT_EQ(MysqlErrorCode(second_insert), kErDupEntry) << second_insert;
    } else {
      EXPECT_TRUE(second_insert.ok()) << second_insert;
    }
    EXPECT_EQ(
        db_->Scalar(absl::StrCat(
            "SELECT GROUP_CONCAT(id) FROM msgq.q WHERE dedup_key = ", key)),
        absl::StrCat(commit ? id : id + 1));
  }
}

// Two producers enqueue the same keys at once, each key in its own
// transaction: for every key exactly one row, one producer's, and the other
// producer got 1062 for it.
TEST_F(DedupTest, TwoRacingProducersMakeExactlyOneRowPerKey) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl(
      "q", MessageComment("msgq_dedup_window=60"), kDedupColumns)));
  constexpr int kKeys = 200;
  absl::Barrier start(2);
  std::vector<std::vector<std::optional<unsigned int>>> outcome(
      2, std::vector<std::optional<unsigned int>>(kKeys));
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      auto conn = db_->Connect();
      start.Block();
      if (!conn.ok()) return;
      for (int k = 0; k < kKeys; ++k) {
        absl::Status s = (*conn)->Execute("BEGIN").status();
        if (s.ok()) {
          s = (*conn)
                  ->Execute(absl::StrCat(
                      "INSERT INTO msgq.q (id, message, dedup_key) VALUES (",
                      p * 1000 + k, ", '{}', 'key-", k, "')"))
                  .status();
        }
        outcome[p][k] = s.ok() ? 0u : MysqlErrorCode(s).value_or(1);
        (void)(*conn)->Execute(s.ok() ? "COMMIT" : "ROLLBACK");
      }
    });
  }
  for (std::thread& t : producers) t.join();
  auto rows = db_->Query(
      "SELECT dedup_key, COUNT(*), MIN(id) FROM msgq.q GROUP BY dedup_key "
      "ORDER BY CAST(SUBSTRING(dedup_key, 5) AS UNSIGNED)");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->rows.size(), static_cast<size_t>(kKeys));
  int wins[2] = {0, 0};
  for (int k = 0; k < kKeys; ++k) {
    SCOPED_TRACE(k);
    const auto& row = rows->rows[k];
    EXPECT_EQ(row[0], absl::StrCat("key-", k));
    EXPECT_EQ(row[1], "1");
    const int winner = row[2] == absl::StrCat(k) ? 0 : 1;
    EXPECT_EQ(row[2], absl::StrCat(winner * 1000 + k));
    EXPECT_EQ(outcome[winner][k], 0u);
    EXPECT_EQ(outcome[1 - winner][k], kErDupEntry);
    ++wins[winner];
  }
  EXPECT_EQ(wins[0] + wins[1], kKeys);
}

// The purge keeps an acked or dead row whose key is still in its window
// (counted from time_created) and deletes the others as usual; the key of
// a deleted row can be used again, the kept one cannot.
TEST_F(DedupTest, PurgeKeepsKeysForTheWindowThenFreesThem) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl(
      "q",
      MessageComment("vt_purge_after=1,vt_poller_interval=0.2,"
                     "msgq_dead_retention=1,msgq_dedup_window=3600"),
      kDedupColumns)));
  const int64_t now = NowNanos();
  const int64_t past = now - 10 * kSecond;   // acked or died 10 s ago
  const int64_t old = now - 7200 * kSecond;  // enqueued before the window
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "INSERT INTO msgq.q (id, dedup_key, time_created, time_acked, "
      "time_next, time_dead) VALUES "
      "(1, 'acked-in', ",
      now, ", ", past, ", NULL, NULL), (2, 'acked-out', ", old, ", ", past,
      ", NULL, NULL), (3, NULL, ", now, ", ", past,
      ", NULL, NULL), (4, 'dead-in', ", now, ", NULL, NULL, ", past,
      "), (5, 'dead-out', ", old, ", NULL, NULL, ", past, "), (6, NULL, ", now,
      ", NULL, NULL, ", past, ")")));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(
      Eventually([&] { return Ids(*db_, "q").size() <= 2; }, absl::Seconds(30)))
      << absl::StrJoin(Ids(*db_, "q"), ",");
  EXPECT_THAT(Ids(*db_, "q"), ElementsAre("1", "4"));
  // The freed keys enqueue again; the kept ones are still refused.
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.q (id, dedup_key) VALUES (7, 'acked-out'), "
           "(8, 'dead-out')"));
  for (const char* key : {"acked-in", "dead-in"}) {
    absl::Status s = db_->Exec(absl::StrCat(
        "INSERT INTO msgq.q (id, dedup_key) VALUES (9, '", key, "')"));
    EXPECT_EQ(MysqlErrorCode(s), kErDupEntry) << key << ": " << s;
  }
}

// The store's purges at fixed times (no clock): a row with a key stays
// while its time_created is within msgq_dedup_window of now (now = the
// cutoff + vt_purge_after, or + msgq_dead_retention for dead rows), and
// goes at the first purge after that.
class DedupStoreTest : public StoreSqlTest {};

TEST_F(DedupStoreTest, PurgesKeepKeysUntilTheirWindowHasPassed) {
  ASSERT_NO_FATAL_FAILURE(Exec("USE msgq"));
  ASSERT_NO_FATAL_FAILURE(Exec(MessageTableDdl(
      "q",
      MessageComment("vt_purge_after=100,msgq_dead_retention=100,"
                     "msgq_dedup_window=1000"),
      kDedupColumns)));
  constexpr int64_t kNow = 1'800'000'000 * kSecond;
  const int64_t acked = kNow - 200 * kSecond;   // past vt_purge_after
  const int64_t recent = kNow - 500 * kSecond;  // in the window until +500 s
  const int64_t old = kNow - 2000 * kSecond;    // past the window
  ASSERT_NO_FATAL_FAILURE(Exec(absl::StrCat(
      "INSERT INTO msgq.q (id, dedup_key, time_created, time_acked, "
      "time_next, time_dead) VALUES (1, 'a1', ",
      recent, ", ", acked, ", NULL, NULL), (2, 'a2', ", old, ", ", acked,
      ", NULL, NULL), (3, NULL, ", recent, ", ", acked,
      ", NULL, NULL), (4, 'a4', NULL, ", acked, ", NULL, NULL), (5, 'd5', ",
      recent, ", NULL, NULL, ", acked, "), (6, 'd6', ", old, ", NULL, NULL, ",
      acked, ")")));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);
  const int64_t purge_after = 100 * kSecond;
  auto purged = store->Purge(kNow - purge_after, 500);
  ASSERT_TRUE(purged.ok()) << purged.status();
  EXPECT_EQ(*purged, 3);  // 2 (old key), 3 (no key), 4 (no time_created)
  auto dead = store->PurgeDead(kNow - purge_after, 500);
  ASSERT_TRUE(dead.ok()) << dead.status();
  EXPECT_EQ(*dead, 1);  // 6
  EXPECT_THAT(Ids(*db_, "q"), ElementsAre("1", "5"));
  // 499 s later the keys are still in their window; at 501 s they are not.
  const int64_t later = kNow + 499 * kSecond;
  purged = store->Purge(later - purge_after, 500);
  dead = store->PurgeDead(later - purge_after, 500);
  ASSERT_TRUE(purged.ok() && dead.ok());
  EXPECT_EQ(*purged + *dead, 0);
  const int64_t past = kNow + 501 * kSecond;
  purged = store->Purge(past - purge_after, 500);
  dead = store->PurgeDead(past - purge_after, 500);
  ASSERT_TRUE(purged.ok() && dead.ok());
  EXPECT_EQ(*purged, 1);
  EXPECT_EQ(*dead, 1);
  EXPECT_THAT(Ids(*db_, "q"), ElementsAre());
}

}  // namespace
}  // namespace msgq::testing
