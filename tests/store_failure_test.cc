// MysqlMessageStore's failure handling (docs/tables.md#when-work-fails) against
// a real private MariaDB: nacks (retry, dead, killed by msgq_max_attempts /
// msgq_max_age), extends, redrives, last_error, the dead-row reads, and each
// group failing on its own. The store is driven directly (no msgqd), with fixed
// times.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "tests/store_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;

// In the past of MariaDB's clock, which the reads judge due by.
constexpr int64_t kNow = 1'700'000'000'000'000'000;
constexpr int64_t kLater = kNow + 30 * kSecond;
constexpr char kOptional[] =
    "time_created bigint, time_dead bigint, last_error varchar(8)";

class StoreFailureTest : public StoreSqlTest {
 protected:
  // A message table with a varchar id (else as CreateTable).
  void CreateTextIdTable(const std::string& name, const std::string& extra) {
    Exec("USE msgq");
    Exec(absl::StrReplaceAll(
        MessageTableDdl(name, MessageComment(), extra),
        {{"id bigint NOT NULL", "id varchar(100) NOT NULL"}}));
  }

  // Inserts a pending row sent `epoch` times, due at kNow.
  void Pending(const std::string& table, const std::string& id, int64_t epoch,
               const std::string& time_created = "NULL") {
    Exec(absl::StrCat(
        "INSERT INTO msgq.`", table,
        "` (id, epoch, time_next, time_created, message) VALUES ('", id, "', ",
        epoch, ", ", kNow, ", ", time_created, ", '{}')"));
  }
  // Inserts a dead row.
  void InsertDead(const std::string& table, const std::string& id,
                  int64_t epoch, int64_t time_dead,
                  const std::string& error = "old") {
    Exec(absl::StrCat(
        "INSERT INTO msgq.`", table,
        "` (id, epoch, time_next, time_dead, last_error, time_created, "
        "message) VALUES ('",
        id, "', ", epoch, ", NULL, ", time_dead, ", '", error, "', 7, '{}')"));
  }

  // "epoch next acked dead error" of one row (NULL as "-"), or "none".
  std::string State(const std::string& table, const std::string& id) {
    absl::StatusOr<QueryResult> r = db_->Query(absl::StrCat(
        "SELECT epoch, time_next, time_acked, time_dead, last_error FROM "
        "msgq.`",
        table, "` WHERE id = '", id, "'"));
    if (!r.ok()) return std::string(r.status().message());
    if (r->rows.empty()) return "none";
    std::vector<std::string> parts;
    for (const auto& v : r->rows[0]) {
      if (!v.has_value()) {
        parts.push_back("-");
      } else if (*v == absl::StrCat(kNow)) {
        parts.push_back("now");
      } else if (*v == absl::StrCat(kLater)) {
        parts.push_back("later");
      } else {
        parts.push_back(*v);
      }
    }
    return absl::StrJoin(parts, " ");
  }

  int64_t Int(const std::string& sql) {
    int64_t v = -1;
    EXPECT_TRUE(absl::SimpleAtoi(db_->Scalar(sql), &v)) << sql;
    return v;
  }

  static WriteBatch Batch() {
    WriteBatch b;
    b.now = kNow;
    return b;
  }
};

absl::StatusOr<NackCount> NackResult(const absl::StatusOr<WriteResult>& r,
                                     size_t i) {
  if (!r.ok()) return r.status();
  return r->nacks.at(i);
}

MATCHER_P(Holds, value, "") { return arg.ok() && *arg == value; }

MATCHER_P2(IsCount, retried, dead, "") {
  return arg.ok() && arg->retried == retried && arg->dead == dead;
}

TEST_F(StoreFailureTest, NackRetriesOrKillsOnlyTheCurrentDelivery) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  for (const char* id : {"1", "2", "3", "4"}) Pending("t", id, 1);
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  WriteBatch b = Batch();
  // Delivered with epoch 0 (the row's epoch is 1): retry 1, kill 2; 3 is
  // named with a stale epoch, 9 does not exist.
  b.nack_groups.push_back({{{"1", 0, kLater},
                            {"2", 0, std::nullopt},
                            {"3", 5, kLater},
                            {"9", 0, std::nullopt}},
                           "boom"});
  absl::StatusOr<WriteResult> r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->nacks.size(), 1u);
  EXPECT_THAT(r->nacks[0], IsCount(1, 1));
  EXPECT_TRUE(r->acks.empty());
  EXPECT_EQ(State("t", "1"), "1 later - - boom");
  EXPECT_EQ(State("t", "2"), "1 - - now boom");
  EXPECT_EQ(State("t", "3"), "1 now - - -");
  EXPECT_THAT(store->CountDead(), Holds(1));

  // A dead row is neither acked nor postponed; an acked row is not nacked.
  b = Batch();
  b.ack_groups = {{"2"}, {"4"}};
  b.postpones = {{"2", kLater}};
  r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->acks, ElementsAre(Holds(0), Holds(1)));
  EXPECT_EQ(State("t", "2"), "1 - - now boom");
  b = Batch();
  b.nack_groups.push_back({{{"4", 0, std::nullopt}}, "late"});
  b.nack_groups.push_back({{{"2", 0, kLater}}, "again"});
  r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->nacks[0], IsCount(0, 0));
  EXPECT_THAT(r->nacks[1], IsCount(0, 0));
  EXPECT_EQ(State("t", "4"), "1 - now - -");

  // An empty reason leaves last_error as it was.
  b = Batch();
  b.nack_groups.push_back({{{"1", 0, std::nullopt}}, ""});
  EXPECT_THAT(NackResult(store->Write(b), 0), IsCount(0, 1));
  EXPECT_EQ(State("t", "1"), "1 - - now boom");
}

TEST_F(StoreFailureTest, MaxAttemptsAndMaxAgeKillAtNackTime) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("t", "msgq_max_attempts=3,msgq_max_age=60", kOptional));
  const std::string fresh = absl::StrCat(kNow - 10 * kSecond);
  const std::string old = absl::StrCat(kNow - 61 * kSecond);
  Pending("t", "1", 3, fresh);   // third send: too many attempts
  Pending("t", "2", 1, old);     // first send, too old
  Pending("t", "3", 2, fresh);   // second send, young: retried
  Pending("t", "4", 1, "NULL");  // no time_created: never too old
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  WriteBatch b = Batch();
  b.nack_groups.push_back(
      {{{"1", 2, kLater}, {"2", 0, kLater}, {"3", 1, kLater}, {"4", 0, kLater}},
       "retry"});
  EXPECT_THAT(NackResult(store->Write(b), 0), IsCount(2, 2));
  EXPECT_EQ(State("t", "1"), "3 - - now retry");
  EXPECT_EQ(State("t", "2"), "1 - - now retry");
  EXPECT_EQ(State("t", "3"), "2 later - - retry");
  EXPECT_EQ(State("t", "4"), "1 later - - retry");
}

TEST_F(StoreFailureTest, ExtendChangesOnlyTheHoldersRow) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  Pending("t", "1", 2);
  Pending("t", "2", 2);
  InsertDead("t", "3", 2, kNow);
  Exec(
      absl::StrCat("INSERT INTO msgq.t (id, epoch, time_next, time_acked) "
                   "VALUES (4, 2, NULL, ",
                   kNow, ")"));
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  WriteBatch b = Batch();
  b.extend_groups.push_back(
      {{{"1", 1}, {"3", 1}, {"4", 1}}, kLater});    // holder
  b.extend_groups.push_back({{{"2", 0}}, kLater});  // stale: sent again since
  b.extend_groups.push_back({{}, kLater});
  absl::StatusOr<WriteResult> r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->extends, ElementsAre(Holds(1), Holds(0), Holds(0)));
  EXPECT_EQ(State("t", "1"), "2 later - - -");
  EXPECT_EQ(State("t", "2"), "2 now - - -");
  EXPECT_EQ(State("t", "3"), "2 - - now old");
  EXPECT_EQ(State("t", "4"), "2 - now - -");
}

TEST_F(StoreFailureTest, RedriveByIdsAndAll) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  InsertDead("t", "1", 3, kNow - kSecond);
  InsertDead("t", "2", 5, kNow - kSecond);
  InsertDead("t", "3", 1, kNow - kSecond);
  Pending("t", "4", 1);
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  WriteBatch b = Batch();
  b.now = kLater;
  b.redrive_groups.push_back({{"1", "4", "99"}, false});
  b.redrive_groups.push_back({{}, false});
  absl::StatusOr<WriteResult> r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->redrives, ElementsAre(Holds(1), Holds(0)));
  // last_error stays: it says why the row died last.
  EXPECT_EQ(State("t", "1"), "0 later - - old");
  EXPECT_EQ(State("t", "4"), "1 now - - -");
  EXPECT_THAT(store->CountDead(), Holds(2));
  b.redrive_groups = {{{"ignored"}, true}};
  r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->redrives, ElementsAre(Holds(2)));
  EXPECT_EQ(State("t", "2"), "0 later - - old");
  EXPECT_EQ(State("t", "3"), "0 later - - old");
  EXPECT_THAT(store->CountDead(), Holds(0));
  // Redriven rows are due again (with the pending row 4).
  absl::StatusOr<std::vector<Message>> due = store->PollDue(kLater, 10);
  ASSERT_TRUE(due.ok()) << due.status();
  EXPECT_EQ(due->size(), 4u);
}

TEST_F(StoreFailureTest, LastErrorIsCutAndStoredSafely) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  // A server that treats backslashes literally must store the same bytes.
  Exec("SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES'");
  for (int i = 1; i <= 5; ++i) Pending("t", absl::StrCat(i), 1);
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> reasons = {
      "0123456789",  // cut to 8
      "a'b\"c\\d`",  // quotes
      "\xff\xfe"
      "ok'); DROP TABLE t; --",  // invalid UTF-8
      "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3"
      "\xA9",
      std::string("nul\0x", 5)};
  WriteBatch b = Batch();
  for (size_t i = 0; i < reasons.size(); ++i) {
    b.nack_groups.push_back(
        {{{absl::StrCat(i + 1), 0, std::nullopt}}, reasons[i]});
  }
  absl::StatusOr<WriteResult> r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t i = 0; i < reasons.size(); ++i) {
    EXPECT_THAT(r->nacks[i], IsCount(0, 1)) << i;
  }
  auto hex = [&](int id) {
    return db_->Scalar(
        absl::StrCat("SELECT HEX(last_error) FROM msgq.t WHERE id = ", id));
  };
  EXPECT_EQ(hex(1), "3031323334353637");                  // "01234567"
  EXPECT_EQ(hex(2), "61276222635C6460");                  // a'b"c\d`
  EXPECT_EQ(hex(3), "EFBFBDEFBFBD6F6B27293B20");          // ��ok'); D
  EXPECT_EQ(hex(4), "C3A9C3A9C3A9C3A9C3A9C3A9C3A9C3A9");  // 8 x é
  EXPECT_EQ(hex(5), "6E756C0078");                        // nul\0x
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t"), 5);

  // Columns of narrower character sets get what they can hold, where a
  // strict sql_mode would refuse the whole nack (error 1366).
  for (const auto& [name, charset, stored] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"l1", "latin1", "3F3F3F3F7A"},
           {"u3", "utf8mb3", "C3A9E282ACEFBFBDEFBFBD7A"},
           {"u4", "utf8mb4", "C3A9E282ACF09F9880EFBFBD7A"}}) {
    SCOPED_TRACE(charset);
    ASSERT_NO_FATAL_FAILURE(CreateTable(
        name, "",
        absl::StrCat("last_error varchar(8) CHARACTER SET ", charset)));
    Exec(absl::StrCat("INSERT INTO msgq.", name,
                      " (id, epoch, time_next) VALUES (1, 1, 5)"));
    auto narrow = Store(name);
    ASSERT_NE(narrow, nullptr);
    b = Batch();
    b.nack_groups.push_back(
        {{{"1", 0, kLater}}, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFFz"});
    r = narrow->Write(b);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_THAT(r->nacks[0], IsCount(1, 0));
    EXPECT_EQ(
        db_->Scalar(absl::StrCat("SELECT HEX(last_error) FROM msgq.", name)),
        stored);
  }
}

TEST_F(StoreFailureTest, DeadReadsPageByIntegerIdAndPurge) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  // Numeric order (2 < 10), not text order.
  for (int id : {20, 1, 10, 2, 11}) InsertDead("t", absl::StrCat(id), id, id);
  Pending("t", "5", 1);
  Exec(
      absl::StrCat("INSERT INTO msgq.t (id, time_next, time_acked) VALUES "
                   "(6, NULL, ",
                   kNow, ")"));
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->CountDead(), Holds(5));
  std::vector<std::string> pages;
  std::string after;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::vector<DeadRow>> page = store->ListDead(after, 2);
    ASSERT_TRUE(page.ok()) << page.status();
    std::vector<std::string> ids;
    for (const DeadRow& row : *page) ids.push_back(row.id);
    pages.push_back(absl::StrJoin(ids, ","));
    if (page->empty()) break;
    after = page->back().id;
  }
  EXPECT_THAT(pages, ElementsAre("1,2", "10,11", "20", ""));
  absl::StatusOr<std::vector<DeadRow>> first = store->ListDead("", 1);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].id, "1");
  EXPECT_EQ((*first)[0].epoch, 1);
  EXPECT_EQ((*first)[0].last_error, "old");
  EXPECT_EQ((*first)[0].time_dead, 1);
  EXPECT_EQ((*first)[0].time_created, 7);
  EXPECT_EQ(store->ListDead("x", 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ListDead("02", 2).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Dead before 11: ids 1, 2, 10; at most 2 per call.
  EXPECT_THAT(store->PurgeDead(11, 2), Holds(2));
  EXPECT_THAT(store->PurgeDead(11, 2), Holds(1));
  EXPECT_THAT(store->PurgeDead(11, 2), Holds(0));
  EXPECT_THAT(store->CountDead(), Holds(2));
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t"), 4);  // 5, 6, 11, 20

  // CountDead reads poller_idx (time_acked, priority, time_next) only, as a
  // covering index: MariaDB shows type=ref, key_len=9 (time_acked IS NULL),
  // "Using where; Using index". With priority between time_acked and
  // time_next it walks every unacked entry (pending and dead) of the index,
  // not only the dead ones; it never reads the rows.
  absl::StatusOr<QueryResult> explain =
      db_->Query("EXPLAIN " + store->CountDeadSql());
  ASSERT_TRUE(explain.ok()) << explain.status();
  ASSERT_EQ(explain->rows.size(), 1u);
  std::string plan;
  for (size_t i = 0; i < explain->columns.size(); ++i) {
    absl::StrAppend(&plan, explain->columns[i], "=",
                    explain->rows[0][i].value_or("NULL"), " ");
  }
  EXPECT_THAT(plan, ::testing::HasSubstr("key=poller_idx "));
  EXPECT_THAT(plan, ::testing::HasSubstr("type=ref "));
  EXPECT_THAT(plan, ::testing::HasSubstr("Using index"));
  std::cerr << "EXPLAIN CountDead: " << plan << "\n";
}

TEST_F(StoreFailureTest, DeadReadsPageByTextIdAndNeedTimeDeadToPurge) {
  ASSERT_NO_FATAL_FAILURE(CreateTextIdTable("t", "last_error text"));
  for (const char* id : {"b", "a''x", "c\\\\d", "zz"}) {
    Exec(
        absl::StrCat("INSERT INTO msgq.t (id, epoch, time_next, message) "
                     "VALUES ('",
                     id, "', 2, NULL, '{}')"));
  }
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<DeadRow>> page = store->ListDead("", 3);
  ASSERT_TRUE(page.ok()) << page.status();
  std::vector<std::string> ids;
  for (const DeadRow& row : *page) ids.push_back(row.id);
  EXPECT_THAT(ids, ElementsAre("a'x", "b", "c\\d"));
  EXPECT_EQ((*page)[0].epoch, 2);
  EXPECT_EQ((*page)[0].time_dead, 0);     // no column
  EXPECT_EQ((*page)[0].time_created, 0);  // no column
  page = store->ListDead("c\\d", 3);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].id, "zz");
  EXPECT_EQ(store->ListDead("\xff", 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PurgeDead(kNow, 10).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store->CountDead(), Holds(4));
  // A text last_error takes a long reason; a dead nack without time_dead
  // only clears time_next.
  Exec(
      "INSERT INTO msgq.t (id, epoch, time_next, message) VALUES ('p', 1, 5, "
      "'{}')");
  WriteBatch b = Batch();
  b.nack_groups.push_back({{{"p", 0, std::nullopt}}, std::string(300, 'r')});
  EXPECT_THAT(NackResult(store->Write(b), 0), IsCount(0, 1));
  EXPECT_EQ(Int("SELECT LENGTH(last_error) FROM msgq.t WHERE id = 'p'"), 300);
}

TEST_F(StoreFailureTest, AFailingGroupFailsAloneAndTheOthersCommit) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  for (int i = 1; i <= 5; ++i) Pending("t", absl::StrCat(i), 1);
  InsertDead("t", "6", 1, kNow);
  Exec(
      "CREATE TRIGGER msgq.poison BEFORE UPDATE ON msgq.t FOR EACH ROW "
      "BEGIN IF NEW.last_error = 'poison' THEN "
      "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned'; END IF; END");
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  WriteBatch b = Batch();
  b.ack_groups = {{"1"}, {"1x"}};
  b.nack_groups.push_back({{{"2", 0, kLater}, {"x", 0, kLater}}, "bad id"});
  b.nack_groups.push_back({{{"2", 0, kLater}}, "fine"});
  b.nack_groups.push_back({{{"3", 0, std::nullopt}}, "poison"});
  b.extend_groups.push_back({{{"4", 0}, {"1.5", 0}}, kLater});
  b.extend_groups.push_back({{{"4", 0}}, kLater});
  b.redrive_groups.push_back({{"6", "-"}, false});
  b.redrive_groups.push_back({{"6"}, false});
  absl::StatusOr<WriteResult> r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->acks[0], 1);
  EXPECT_EQ(r->acks[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r->nacks[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r->nacks[1], IsCount(1, 0));
  EXPECT_EQ(r->nacks[2].status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r->nacks[2].status().message(), ::testing::HasSubstr("poisoned"));
  EXPECT_EQ(r->extends[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*r->extends[1], 1);
  EXPECT_EQ(r->redrives[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*r->redrives[1], 1);
  EXPECT_TRUE(r->postpones.ok());
  EXPECT_EQ(State("t", "1"), "1 - now - -");
  EXPECT_EQ(State("t", "2"), "1 later - - fine");
  EXPECT_EQ(State("t", "3"), "1 now - - -");  // the poisoned nack rolled back
  EXPECT_EQ(State("t", "4"), "1 later - - -");
  EXPECT_EQ(State("t", "6"), "0 now - - old");
}

TEST_F(StoreFailureTest, LongIdListsAreSplitToFitThePacket) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  std::string values;
  std::vector<Nack> nacks;
  std::vector<std::pair<std::string, int64_t>> extends;
  for (int i = 1; i <= 2000; ++i) {
    absl::StrAppend(&values, i > 1 ? "," : "", "(", i, ", 1, ", kNow,
                    ", '{}')");
    if (i <= 1000) {
      nacks.push_back({absl::StrCat(i), 0, std::nullopt});
    } else {
      extends.push_back({absl::StrCat(i), 0});
    }
  }
  Exec("INSERT INTO msgq.t (id, epoch, time_next, message) VALUES " + values);
  ASSERT_NO_FATAL_FAILURE(CreateTable("wide", "", "last_error text"));
  Exec("INSERT INTO msgq.wide (id, epoch, time_next) VALUES (1, 1, 5)");
  // The store's session (connected after this) may send 4 KiB at most:
  // each list of 1000 ids takes several statements.
  Exec("SET GLOBAL max_allowed_packet = 4096");
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  WriteBatch b = Batch();
  b.nack_groups.push_back({nacks, "split"});
  b.extend_groups.push_back({extends, kLater});
  absl::StatusOr<WriteResult> r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->nacks[0], IsCount(0, 1000));
  EXPECT_EQ(*r->extends[0], 1000);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM msgq.t WHERE time_next IS NULL AND "
                "last_error = 'split'"),
            1000);
  EXPECT_EQ(Int(absl::StrCat("SELECT COUNT(*) FROM msgq.t WHERE time_next = ",
                             kLater)),
            1000);
  b = Batch();
  b.redrive_groups.push_back({});
  for (int i = 1; i <= 1000; ++i)
    b.redrive_groups[0].ids.push_back(absl::StrCat(i));
  r = store->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->redrives[0], 1000);

  // A reason whose literal alone does not fit fails its group, naming the
  // cause; a short one still goes through.
  auto other = Store("wide");
  ASSERT_NE(other, nullptr);
  b = Batch();
  std::string long_reason;
  for (int i = 0; i < 3000; ++i) long_reason += "\xC3\xA9";
  b.nack_groups.push_back({{{"1", 0, std::nullopt}}, long_reason});
  b.nack_groups.push_back({{{"1", 0, std::nullopt}}, "short"});
  r = other->Write(b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->nacks[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r->nacks[0].status().message(),
              ::testing::HasSubstr("bytes before its ids does not fit"));
  EXPECT_THAT(r->nacks[1], IsCount(0, 1));
  EXPECT_EQ(db_->Scalar("SELECT last_error FROM msgq.wide"), "short");
}

TEST_F(StoreFailureTest, PollAndFetchReadTimeCreated) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("t", "", kOptional));
  Pending("t", "1", 0, "123");
  Pending("t", "2", 0, "NULL");
  InsertDead("t", "3", 1, kNow);
  auto store = Store("t");
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<Message>> due = store->PollDue(kNow, 10);
  ASSERT_TRUE(due.ok()) << due.status();
  ASSERT_EQ(due->size(), 2u);  // never the dead row
  EXPECT_EQ((*due)[0].id, "1");
  EXPECT_EQ((*due)[0].time_created, 123);
  EXPECT_EQ((*due)[0].time_next, kNow);
  EXPECT_EQ((*due)[1].time_created, 0);
  // Streamed: id, message, time_created, last_error (time_dead is not).
  EXPECT_THAT((*due)[0].row->lengths, ElementsAre(1, 2, 3, -1));
  EXPECT_EQ((*due)[0].row->values, "1{}123");
  absl::StatusOr<std::vector<Message>> fetched =
      store->FetchDue({"1", "3"}, kNow);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  ASSERT_EQ(fetched->size(), 1u);
  EXPECT_EQ((*fetched)[0].time_created, 123);
  EXPECT_EQ((*fetched)[0].row->values, "1{}123");
}

}  // namespace
}  // namespace msgq::testing
