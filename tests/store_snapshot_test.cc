// MysqlMessageStore's reads on a server with a binary log: each poll and
// fetch runs in a consistent snapshot and says where in the binlog it is
// (read_position()), comparable with the positions the binlog watcher
// gives each change (a real private MariaDB, a real watcher).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/binlog/binlog_watcher.h"
#include "engine/sql/consistent_snapshot.h"
#include "gmock/gmock.h"
#include "tests/store_fixture.h"

namespace msgq::testing {
namespace {

// In the past of MariaDB's clock, which the reads judge due by.
constexpr int64_t kNow = 1'700'000'000'000'000'000;
// In the future of MariaDB's clock: a row postponed to it is not due.
constexpr int64_t kFarFuture = 4'000'000'000'000'000'000;

class StoreSnapshotTest : public StoreSqlTest {
 protected:
  PrivateMariaDb::Options DbOptions() override { return {.binlog = true}; }

  // Where the binlog ends now (SHOW MASTER STATUS).
  BinlogPosition End() {
    absl::StatusOr<QueryResult> r = db_->Query("SHOW MASTER STATUS");
    BinlogPosition at;
    if (!r.ok() || r->rows.size() != 1 || !r->rows[0][0].has_value() ||
        !r->rows[0][1].has_value() ||
        !absl::SimpleAtoi(*r->rows[0][1], &at.offset)) {
      ADD_FAILURE() << "SHOW MASTER STATUS";
      return {};
    }
    at.file = *r->rows[0][0];
    at.server = Server();
    return at;
  }

  // The server's identity, as connections and the watcher name it.
  std::string Server() {
    absl::StatusOr<QueryResult> r = db_->Query(kServerIdentitySql);
    if (!r.ok() || r->rows.size() != 1 || !r->rows[0][0].has_value()) {
      ADD_FAILURE() << kServerIdentitySql;
      return "";
    }
    return *r->rows[0][0];
  }
};

class PositionListener : public BinlogWatcher::Listener {
 public:
  std::optional<BookkeepingColumns> Columns(const std::string& db,
                                            const std::string& table) override {
    if (db != "msgq" || table != "q") return std::nullopt;
    return BookkeepingColumns{6, 0, 1, 3, 4};
  }
  void OnRowChanges(const std::string&, const std::string&,
                    std::vector<RowChange> changes) override {
    absl::MutexLock lock(&mu_);
    for (RowChange& c : changes) changes_.push_back(std::move(c));
  }
  void OnStreaming(bool, const std::string&) override {}
  std::vector<RowChange> changes() const {
    absl::MutexLock lock(&mu_);
    return changes_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<RowChange> changes_ ABSL_GUARDED_BY(mu_);
};

// A read's position is the end of the last commit before it: the change
// of a row committed before the read is in it, one committed after is not.
TEST_F(StoreSnapshotTest, AReadsPositionIncludesTheCommitsBeforeItOnly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=30"));
  BinlogWatcher::Options options;
  options.mysql = db_->mysql_options();
  options.server_id = 5161;
  PositionListener listener;
  BinlogWatcher watcher(options, &listener);
  watcher.Start();
  ASSERT_TRUE(Eventually([&] { return watcher.status().streaming; },
                         absl::Seconds(10)));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);

  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  const BinlogPosition after_first = End();
  auto polled = store->PollDue(kNow, 10);
  ASSERT_TRUE(polled.ok()) << polled.status();
  ASSERT_EQ(polled->size(), 1u);
  const BinlogPosition poll_at = store->read_position();
  EXPECT_EQ(poll_at, after_first);

  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 2, 2));
  const BinlogPosition after_second = End();
  ASSERT_TRUE(Eventually([&] { return listener.changes().size() >= 2; },
                         absl::Seconds(10)));
  const std::vector<RowChange> changes = listener.changes();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].id, "1");
  EXPECT_EQ(changes[1].id, "2");
  EXPECT_EQ(changes[0].position.file, after_first.file);
  // Both name the same server, "server_id@hostname:port".
  EXPECT_EQ(changes[0].position.server, Server());
  EXPECT_EQ(poll_at.server, Server());
  EXPECT_THAT(poll_at.server, ::testing::MatchesRegex("[0-9]+@[^:]+:[0-9]+"));
  EXPECT_EQ(IncludedIn(changes[0].position, poll_at), true);
  EXPECT_EQ(IncludedIn(changes[1].position, poll_at), false);

  auto fetched = store->FetchDue({"1", "2"}, kNow);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->size(), 2u);
  const BinlogPosition fetch_at = store->read_position();
  EXPECT_EQ(fetch_at, after_second);
  EXPECT_EQ(IncludedIn(changes[1].position, fetch_at), true);

  // A read of ids only has no rows, so no position.
  auto ids = store->PollDueIds(kNow, 10);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), 2u);
  EXPECT_FALSE(store->read_position().known());
  watcher.Stop();
}

// Between reads no transaction stays open: a write on the store's
// connection commits on its own (another session sees it at once).
TEST_F(StoreSnapshotTest, NoTransactionStaysOpenAfterARead) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=30"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  auto store = Store("q");
  ASSERT_NE(store, nullptr);
  auto polled = store->PollDue(kNow, 10);
  ASSERT_TRUE(polled.ok()) << polled.status();
  EXPECT_TRUE(store->read_position().known());
  WriteBatch batch;
  batch.now = kNow;
  batch.postpones = {{"1", kFarFuture}};
  auto written = store->Write(batch);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_NE(written->gtid, "");
  EXPECT_EQ(db_->Scalar("SELECT epoch FROM msgq.q WHERE id = 1"), "1");
  // The next poll reads the postpone: a new snapshot.
  auto again = store->PollDue(kNow, 10);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].id, "2");
}

// A consistent snapshot on a session whose level is READ COMMITTED (msgq's
// pool) still reads one view: a commit made by another session after the
// snapshot began is neither in its reads nor before its position.
TEST_F(StoreSnapshotTest, ASnapshotOnAReadCommittedSessionReadsOneView) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=30"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  auto conn = db_->Connect();
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_EQ((*conn)->isolation_level(), "READ COMMITTED");
  const BinlogPosition before = End();
  absl::StatusOr<BinlogPosition> at = BeginConsistentSnapshot(**conn);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(*at, before);
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 3, 3));
  absl::StatusOr<QueryResult> count =
      (*conn)->Query("SELECT COUNT(*) FROM msgq.q");
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->rows[0][0].value_or(""), "2");
  absl::StatusOr<std::string> gtid = GtidPositionAt(**conn, *at);
  ASSERT_TRUE(gtid.ok()) << gtid.status();
  EXPECT_EQ(*gtid,
            db_->Scalar(absl::StrCat("SELECT BINLOG_GTID_POS('", before.file,
                                     "', ", before.offset, ")")));
  EXPECT_NE(*gtid, "");
  ASSERT_TRUE((*conn)->Execute("COMMIT").ok());
  count = (*conn)->Query("SELECT COUNT(*) FROM msgq.q");
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->rows[0][0].value_or(""), "3");
}

}  // namespace
}  // namespace msgq::testing
