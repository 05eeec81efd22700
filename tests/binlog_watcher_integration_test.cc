// BinlogWatcher in process against a real private MariaDB: what status()
// reports, what the listener sees for RESET MASTER, eviction and DDL, and
// what a consistent snapshot includes.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "engine/binlog/binlog_watcher.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using BinlogWatcherTest = MsgqTest;

// The watcher itself, in process: what status() reports and what the
// listener sees (a stop then a start, which makes the engine poll).
class RecordingListener : public BinlogWatcher::Listener {
 public:
  std::optional<BookkeepingColumns> Columns(const std::string& db,
                                            const std::string& table) override {
    if (db != "msgq" || table != "q") return std::nullopt;
    return BookkeepingColumns{6, 0, 1, 3, 4};
  }
  void OnRowChanges(const std::string&, const std::string&,
                    std::vector<RowChange> changes) override {
    absl::MutexLock lock(&mu_);
    for (const RowChange& c : changes) {
      ids_.push_back(c.id);
      gtids_.push_back(c.id + "@" + c.gtid);
    }
  }
  // "id@gtid" of each change, in order.
  std::vector<std::string> gtids() const {
    absl::MutexLock lock(&mu_);
    return gtids_;
  }
  void OnStreaming(bool streaming, const std::string&) override {
    absl::MutexLock lock(&mu_);
    transitions_ += streaming ? "+" : "-";
  }
  std::vector<std::string> ids() const {
    absl::MutexLock lock(&mu_);
    return ids_;
  }
  void OnTableReset(const std::string& db, const std::string& table) override {
    absl::MutexLock lock(&mu_);
    resets_.push_back(db + "." + table);
  }
  std::vector<std::string> resets() const {
    absl::MutexLock lock(&mu_);
    return resets_;
  }
  std::string transitions() const {
    absl::MutexLock lock(&mu_);
    return transitions_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> gtids_ ABSL_GUARDED_BY(mu_);
  std::string transitions_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> resets_ ABSL_GUARDED_BY(mu_);
};

// TRUNCATE, ALTER, RENAME and DROP of a message table reach the listener
// (the engine resets that table), other tables' do not.
TEST_F(BinlogWatcherTest, WatcherReportsDdlOfMessageTables) {
  CreateTable("q", "vt_poller_interval=30");
  Exec("CREATE TABLE msgq.plain (a int)");
  BinlogWatcher::Options options;
  options.mysql = db_->mysql_options();
  options.server_id = 5152;
  RecordingListener listener;
  BinlogWatcher watcher(options, &listener);
  watcher.Start();
  ASSERT_TRUE(Eventually([&] { return watcher.status().streaming; },
                         absl::Seconds(10)));
  Exec("TRUNCATE TABLE msgq.plain");
  Exec("USE msgq");
  Exec("TRUNCATE q");
  Exec("ALTER TABLE `msgq`.`q` ADD COLUMN extra int");
  Exec("RENAME TABLE msgq.q TO msgq.q2");
  Exec("DROP TABLE IF EXISTS msgq.plain, msgq.q2");
  ASSERT_TRUE(Eventually([&] { return listener.resets().size() >= 3; },
                         absl::Seconds(5)));
  EXPECT_THAT(listener.resets(), ElementsAre("msgq.q", "msgq.q", "msgq.q"));
  watcher.Stop();
}

// A consistent snapshot includes the transactions committed before it and
// none after: what the poll after an XA COMMIT of unknown rows waits for.
// A write knows its GTID from its commit's OK packet (session tracking,
// no round trip), and the binlog's change carries the same GTID: msgq's
// own writes are known in the binlog exactly.
TEST_F(BinlogWatcherTest, AWritesTrackedGtidIsItsChangesGtid) {
  CreateTable("q", "vt_poller_interval=30");
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  BinlogWatcher::Options options;
  options.mysql = db_->mysql_options();
  options.server_id = 5153;
  RecordingListener listener;
  BinlogWatcher watcher(options, &listener);
  watcher.Start();
  ASSERT_TRUE(Eventually([&] { return watcher.status().streaming; },
                         absl::Seconds(10)));
  absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
      MysqlConnection::Connect(db_->mysql_options());
  ASSERT_TRUE(conn.ok()) << conn.status();
  // A statement that changes nothing commits no GTID.
  ASSERT_TRUE(
      (*conn)->Execute("UPDATE msgq.q SET epoch = 1 WHERE id = 9").ok());
  EXPECT_EQ((*conn)->TrackedLastGtid(), "");
  ASSERT_TRUE(
      (*conn)->Execute("UPDATE msgq.q SET epoch = 1 WHERE id = 1").ok());
  const std::string single = (*conn)->TrackedLastGtid();
  ASSERT_TRUE((*conn)->Execute("BEGIN").ok());
  ASSERT_TRUE(
      (*conn)->Execute("UPDATE msgq.q SET epoch = 2 WHERE id = 2").ok());
  ASSERT_TRUE((*conn)->Execute("COMMIT").ok());
  const std::string txn = (*conn)->TrackedLastGtid();
  EXPECT_EQ(txn, db_->Scalar("SELECT @@gtid_binlog_pos"));
  EXPECT_NE(single, txn);
  ASSERT_TRUE(Eventually([&] { return listener.gtids().size() >= 2; },
                         absl::Seconds(10)));
  EXPECT_THAT(listener.gtids(), ElementsAre("1@" + single, "2@" + txn));
  watcher.Stop();
}

TEST_F(BinlogWatcherTest, SnapshotIncludesExactlyTheCommittedTransactions) {
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE TABLE msgq.t (id INT PRIMARY KEY)"));
  const std::string now = db_->Scalar("SELECT @@gtid_binlog_pos");
  const std::vector<std::string> parts = absl::StrSplit(now, '-');
  ASSERT_EQ(parts.size(), 3u) << now;
  int64_t seq = 0;
  ASSERT_TRUE(absl::SimpleAtoi(parts[2], &seq)) << now;
  const std::string next = absl::StrCat(parts[0], "-", parts[1], "-", seq + 1);
  std::unique_ptr<MysqlConnection> control;
  const MysqlOptions mysql = db_->mysql_options();

  absl::StatusOr<bool> current =
      BinlogWatcher::SnapshotIncludes(now, mysql, &control);
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_TRUE(*current);
  EXPECT_NE(control, nullptr);
  absl::StatusOr<bool> ahead =
      BinlogWatcher::SnapshotIncludes(next, mysql, &control);
  ASSERT_TRUE(ahead.ok()) << ahead.status();
  EXPECT_FALSE(*ahead);
  absl::StatusOr<bool> other_domain =
      BinlogWatcher::SnapshotIncludes("7-1-1", mysql, &control);
  ASSERT_TRUE(other_domain.ok()) << other_domain.status();
  EXPECT_FALSE(*other_domain);

  ASSERT_NO_FATAL_FAILURE(Exec("INSERT INTO msgq.t VALUES (1)"));
  EXPECT_EQ(db_->Scalar("SELECT @@gtid_binlog_pos"), next);
  absl::StatusOr<bool> committed =
      BinlogWatcher::SnapshotIncludes(next, mysql, &control);
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_TRUE(*committed);
}

TEST_F(BinlogWatcherTest, WatcherStatusCountsPositionResetsAndEvictions) {
  CreateTable("q", "vt_poller_interval=30");
  BinlogWatcher::Options options;
  options.mysql = db_->mysql_options();
  options.server_id = 5151;
  RecordingListener listener;
  BinlogWatcher watcher(options, &listener);
  watcher.Start();
  ASSERT_TRUE(Eventually([&] { return watcher.status().streaming; },
                         absl::Seconds(10)));
  InsertRange("q", 1, 1);
  ASSERT_TRUE(
      Eventually([&] { return listener.ids().size() == 1; }, absl::Seconds(5)));
  Exec("RESET MASTER");
  // Row 2 is in the gap the engine's poll covers; row 3 is streamed again.
  InsertRange("q", 2, 2);
  ASSERT_TRUE(Eventually(
      [&] {
        const BinlogWatcher::Status st = watcher.status();
        return st.position_resets == 1 && st.streaming;
      },
      absl::Seconds(15)));
  InsertRange("q", 3, 3);
  ASSERT_TRUE(Eventually(
      [&] {
        return listener.ids().size() >= 2 && listener.ids().back() == "3";
      },
      absl::Seconds(10)));
  BinlogWatcher::Status st = watcher.status();
  EXPECT_EQ(st.position_resets, 1);
  EXPECT_EQ(st.evictions, 0);
  EXPECT_EQ(st.server_id, 5151u);
  EXPECT_THAT(st.last_error, HasSubstr("behind"));
  EXPECT_EQ(listener.transitions(), "+-+");
  EXPECT_TRUE(st.streaming);
  // Another replica with the same server id takes the dump over.
  RecordingListener other_listener;
  BinlogWatcher other(options, &other_listener);
  other.Start();
  EXPECT_TRUE(Eventually(
      [&] { return watcher.status().evictions + other.status().evictions > 0; },
      absl::Seconds(10)));
  other.Stop();
  watcher.Stop();
}

}  // namespace
}  // namespace msgq::testing
