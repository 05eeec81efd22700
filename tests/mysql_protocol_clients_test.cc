// Client libraries receive messages from msgqd's MySQL-protocol port as
// rows: Python's MySQLdb with an unbuffered cursor (SSCursor, a child
// process), Connector/C's mysql_use_result (in this process), and the
// mariadb client on a terminal in batch mode (-B).
#include <mysql.h>
#include <sys/socket.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "tests/mysql_protocol_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;

std::string Row(int id) { return absl::StrCat(id, "\t{\"n\": ", id, "}"); }

class MysqlProtocolClientsTest : public MysqlProtocolTest {};

TEST_F(MysqlProtocolClientsTest, PythonMysqldbSsCursorReceivesRows) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto child = launch::ChildProcess::Start(
      {"/usr/bin/python3", MSGQ_TESTS_DIR "/mysql_protocol_sscursor.py",
       std::to_string(port_), kUser, kPassword, "demo", "3"},
      db_->dir() + "/python.log");
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(WaitForLines(**child, 1)) << (*child)->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  EXPECT_EQ((*child)->Stop(0, absl::Seconds(20)), 0) << (*child)->Log();
  EXPECT_THAT(ClientLines(**child),
              ElementsAre("columns: id,message", Row(1), Row(2), Row(3)));
}

// On a terminal the mariadb client draws a box table as wide as the
// columns' declared lengths (thousands of dashes for a TEXT or JSON
// column); with -B, as the docs show it, it prints one tab-separated line
// per row there too, each as it arrives (-q). `script` gives it a terminal.
TEST_F(MysqlProtocolClientsTest, MariadbBatchModeOnATerminalPrintsALinePerRow) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto child = launch::ChildProcess::Start(
      {"script", "-qfec",
       absl::StrCat("mariadb --no-defaults -B -q -h 127.0.0.1 -P ", port_,
                    " -u ", kUser, " -p", kPassword,
                    " -e 'stream * from demo'"),
       "/dev/null"},
      db_->dir() + "/terminal.log");
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 1; },
      absl::Seconds(10)))
      << (*child)->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 2));
  // The terminal ends lines with \r\n.
  auto lines = [&] {
    std::vector<std::string> out;
    for (absl::string_view line :
         absl::StrSplit((*child)->Log(), '\n', absl::SkipEmpty())) {
      out.emplace_back(absl::StripSuffix(line, "\r"));
    }
    return out;
  };
  ASSERT_TRUE(
      Eventually([&] { return lines().size() >= 3; }, absl::Seconds(10)))
      << (*child)->Log();
  EXPECT_THAT(lines(), ElementsAre("id\tmessage", Row(1), Row(2)));
}

// Reads `n` rows of `stream * from demo` with mysql_use_result on a thread.
class UseResultReader {
 public:
  UseResultReader(int port, int n)
      : thread_([this, port, n] { Run(port, n); }) {}
  // Cuts a stream still waiting for rows (a failed test), then joins.
  ~UseResultReader() {
    {
      absl::MutexLock lock(&mu_);
      if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
    }
    thread_.join();
  }

  std::vector<std::string> rows() {
    absl::MutexLock lock(&mu_);
    return rows_;
  }
  bool WaitForRows(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return rows_.size() >= n || !error_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
    return rows_.size() >= n;
  }
  std::string error() {
    absl::MutexLock lock(&mu_);
    return error_;
  }

 private:
  void Run(int port, int n) {
    MYSQL* mysql = mysql_init(nullptr);
    if (mysql_real_connect(mysql, "127.0.0.1", kUser, kPassword, "msgq", port,
                           nullptr, 0) == nullptr ||
        mysql_query(mysql, "stream * from demo") != 0) {
      Fail(absl::StrCat(mysql_errno(mysql), ": ", mysql_error(mysql)));
      mysql_close(mysql);
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      fd_ = static_cast<int>(mysql_get_socket(mysql));
    }
    MYSQL_RES* res = mysql_use_result(mysql);
    if (res == nullptr || mysql_num_fields(res) != 2) {
      Fail("no result set of 2 columns");
    } else {
      for (int i = 0; i < n; ++i) {
        MYSQL_ROW row = mysql_fetch_row(res);
        if (row == nullptr) {
          Fail(absl::StrCat("fetch: ", mysql_error(mysql)));
          break;
        }
        unsigned long* lengths = mysql_fetch_lengths(res);
        absl::MutexLock lock(&mu_);
        rows_.push_back(absl::StrCat(std::string(row[0], lengths[0]), "\t",
                                     std::string(row[1], lengths[1])));
      }
    }
    // The stream never ends: cut the socket so freeing the result does not
    // wait for its end.
    {
      absl::MutexLock lock(&mu_);
      shutdown(fd_, SHUT_RDWR);
      fd_ = -1;
    }
    if (res != nullptr) mysql_free_result(res);
    mysql_close(mysql);
  }
  void Fail(std::string error) {
    absl::MutexLock lock(&mu_);
    error_ = std::move(error);
  }

  absl::Mutex mu_;
  std::vector<std::string> rows_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
  int fd_ ABSL_GUARDED_BY(mu_) = -1;  // the stream's socket while open
  std::thread thread_;
};

TEST_F(MysqlProtocolClientsTest, ConnectorCUseResultReceivesRows) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  UseResultReader reader(port_, 3);
  ASSERT_TRUE(Eventually(
      [&] {
        return FindTable(stub_.get(), "demo").subscribers() == 1 ||
               !reader.error().empty();
      },
      absl::Seconds(10)));
  ASSERT_EQ(reader.error(), "");
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_TRUE(reader.WaitForRows(3, absl::Seconds(20))) << reader.error();
  EXPECT_THAT(reader.rows(), ElementsAre(Row(1), Row(2), Row(3)));
}

}  // namespace
}  // namespace msgq::testing
