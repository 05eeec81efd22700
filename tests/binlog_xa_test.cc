// XA transactions and the binlog: MariaDB writes a prepared transaction's
// rows at XA PREPARE, before it commits or rolls back. A real MariaDB, a
// real msgqd, the stock `mariadb` client for the XA statements (a prepared
// transaction outlives its session), real gRPC streams. vt_poller_interval
// is 30 s, so rows that arrive within seconds came through the binlog.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tools/launch/child_process.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;

class BinlogXaTest : public MsgqTest {
 protected:
  // Runs `sql` with the stock client over the server's socket.
  void Client(const std::string& sql) {
    absl::StatusOr<std::string> out = launch::RunCommand(absl::StrCat(
        "mariadb --no-defaults -u root -S ", launch::ShellQuote(db_->socket()),
        " msgq -e ", launch::ShellQuote(sql), " 2>&1"));
    ASSERT_TRUE(out.ok()) << out.status();
  }
  // XA START; INSERT ids [from, to]; XA END; XA PREPARE, as `xid`.
  void Prepare(const std::string& xid, int from, int to) {
    std::string values;
    for (int i = from; i <= to; ++i) {
      absl::StrAppend(&values, i > from ? "," : "", "(", i, ", '{}')");
    }
    Client(absl::StrCat("XA START '", xid, "'; INSERT INTO q (id, message) ",
                        "VALUES ", values, "; XA END '", xid, "'; XA PREPARE '",
                        xid, "'"));
  }
  // A committed row after everything before it: once it is delivered, any
  // row the binlog showed before it would have been too.
  void Fence(StreamCollector& s, int id, size_t rows) {
    InsertRange("q", id, id);
    ASSERT_TRUE(s.WaitForRows(rows, absl::Seconds(5)))
        << "fence " << id << ": " << s.row_count() << " rows\n"
        << server_->Log();
  }
  static std::vector<std::string> Sorted(std::vector<std::string> ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

TEST_F(BinlogXaTest, PreparedRowsWaitForXaCommitAndRolledBackNeverCome) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer();
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  Prepare("rb", 1, 4);
  Prepare("ok", 5, 8);
  ASSERT_NO_FATAL_FAILURE(Fence(s, 100, 1));
  EXPECT_THAT(s.ids(), ElementsAre("100")) << "prepared rows were sent";
  Client("XA ROLLBACK 'rb'");
  ASSERT_NO_FATAL_FAILURE(Fence(s, 101, 2));
  EXPECT_THAT(s.ids(), ElementsAre("100", "101"));
  Client("XA COMMIT 'ok'");
  ASSERT_TRUE(s.WaitForRows(6, absl::Seconds(5)))
      << "the committed XA rows waited for a poll: " << s.row_count();
  // XA COMMIT ... ONE PHASE is an ordinary commit in the binlog.
  Client(
      "XA START 'one'; INSERT INTO q (id, message) VALUES (9, '{}'); "
      "XA END 'one'; XA COMMIT 'one' ONE PHASE");
  ASSERT_NO_FATAL_FAILURE(Fence(s, 102, 8));
  EXPECT_THAT(Sorted(s.ids()),
              ElementsAre("100", "101", "102", "5", "6", "7", "8", "9"));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE id <= 4"), "0");
}

// A transaction prepared while no msgqd followed the binlog: its XA COMMIT
// names rows msgqd never saw, so msgqd polls for them once a snapshot
// includes the commit (the binlog runs a little ahead of InnoDB).
TEST_F(BinlogXaTest, PreparedBeforeARestartArrivesAtItsCommit) {
  CreateTable("q", "vt_poller_interval=30");
  StartServer({"--leases=false"});
  WaitForBinlog("q");
  server_->Kill();
  Prepare("p", 1, 3);
  Prepare("gone", 4, 4);
  StartServer({"--leases=false"});
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(Fence(s, 100, 1));
  EXPECT_THAT(s.ids(), ElementsAre("100"));
  Client("XA ROLLBACK 'gone'");
  Client("XA COMMIT 'p'");
  ASSERT_TRUE(s.WaitForRows(4, absl::Seconds(5)))
      << "rows of an XA COMMIT prepared before the start waited for the "
         "interval poll: "
      << s.row_count() << "\n"
      << server_->Log();
  ASSERT_NO_FATAL_FAILURE(Fence(s, 101, 5));
  EXPECT_THAT(Sorted(s.ids()), ElementsAre("1", "100", "101", "2", "3"));
}

}  // namespace
}  // namespace msgq::testing
