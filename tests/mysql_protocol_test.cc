// msgqd's MySQL-protocol port (docs/mysql-protocol.md) end to end: a private
// MariaDB, a real msgqd, the real `mariadb` client and hand-driven sockets.
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "server/mysql_protocol/command.h"
#include "tests/mysql_protocol_fixture.h"

namespace msgq::testing {
namespace {

namespace mp = ::msgq::mysql_protocol;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What the mariadb client prints for a row of InsertRange (batch mode).
std::string Row(int id) { return absl::StrCat(id, "\t{\"n\": ", id, "}"); }

TEST_F(MysqlProtocolTest, MariadbClientReceivesInsertedMessages) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from demo");
  ASSERT_NE(client, nullptr);
  // The header line comes with the column definitions: id and the payload
  // column; the bookkeeping columns (priority, epoch, time_next,
  // time_acked) are not streamed.
  ASSERT_TRUE(WaitForLines(*client, 1)) << client->Log();
  EXPECT_THAT(ClientLines(*client), ElementsAre("id\tmessage"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 1, 3));
  ASSERT_TRUE(WaitForLines(*client, 4)) << client->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 4, 4));
  ASSERT_TRUE(WaitForLines(*client, 5)) << client->Log();
  EXPECT_THAT(ClientLines(*client),
              ElementsAre("id\tmessage", Row(1), Row(2), Row(3), Row(4)));
  EXPECT_TRUE(client->running());  // streams forever
  EXPECT_EQ(FindTable(stub_.get(), "demo").subscribers(), 1);
  client->Stop(SIGKILL, absl::Seconds(5));
  EXPECT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 0; },
      absl::Seconds(10)));
}

TEST_F(MysqlProtocolTest, WrongPasswordIs1045) {
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("select 1", "wrong");
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(client->Log(),
              HasSubstr("ERROR 1045 (28000): Access denied for user 'reader' "
                        "(using password: YES)"));
  auto raw = RawClient::Connect(port_);
  ASSERT_TRUE(raw.ok());
  auto answer = (*raw)->Login("someone", kPassword);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(ErrCode(*answer), 1045);
  EXPECT_TRUE((*raw)->WaitClosed(absl::Seconds(5)));
}

TEST_F(MysqlProtocolTest, ConnectStatementsAndUnknownTable) {
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto ok = StartMariadb(
      "select 1; select @@version_comment limit 1; "
      "SET NAMES utf8mb4; select database()",
      kPassword, {"-N", "-D", "msgq"});
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->Stop(0, absl::Seconds(20)), 0) << ok->Log();
  EXPECT_THAT(ClientLines(*ok), ElementsAre("1", "msgq", "msgq"));
  auto missing = StartMariadb("stream * from nope");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(missing->Log(),
              HasSubstr("ERROR 1146 (42S02) at line 1: Table 'nope' "
                        "doesn't exist"));
  auto unserved = StartMariadb("show databases");
  ASSERT_NE(unserved, nullptr);
  EXPECT_EQ(unserved->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(unserved->Log(),
              HasSubstr("ERROR 1064 (42000) at line 1: msgq serves "
                        "only 'stream * from"));
}

// Without --mysql_protocol_user (loopback only): any user name with an
// empty password; a password is refused.
TEST_F(MysqlProtocolTest, WithoutAUserAnyNameWithAnEmptyPasswordOnLoopback) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol({}, /*with_user=*/false));
  auto refused = StartMariadb("select 1", "some-password");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(refused->Log(), HasSubstr("ERROR 1045 (28000)"));
  auto client = StartMariadb("stream * from demo", "");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForLines(*client, 1)) << client->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("demo", 7, 7));
  ASSERT_TRUE(WaitForLines(*client, 2)) << client->Log();
  EXPECT_THAT(ClientLines(*client), ElementsAre("id\tmessage", Row(7)));
}

// The mariadb client's Ctrl-C sends KILL QUERY on a second connection: the
// stream ends with ERR 1317 and the subscription goes.
TEST_F(MysqlProtocolTest, CtrlCInTheMariadbClientEndsTheStream) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from demo");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 1; },
      absl::Seconds(10)));
  EXPECT_EQ(client->Stop(SIGINT, absl::Seconds(10)), 1) << client->Log();
  EXPECT_THAT(client->Log(),
              HasSubstr("ERROR 1317 (70100) at line 1: Query execution was "
                        "interrupted"));
  EXPECT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 0; },
      absl::Seconds(10)));
  // KILL of an id that does not exist.
  auto unknown = StartMariadb("kill query 4000000");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(unknown->Log(), HasSubstr("ERROR 1094 (HY000) at line 1: "
                                        "Unknown thread id: 4000000"));
}

// SIGTERM with a client streaming: the port closes its connections before
// the engine stops, and msgqd exits 0.
TEST_F(MysqlProtocolTest, SigtermWhileStreamingExitsCleanly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("demo"));
  ASSERT_NO_FATAL_FAILURE(StartWithMysqlProtocol());
  auto client = StartMariadb("stream * from demo");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "demo").subscribers() == 1; },
      absl::Seconds(10)));
  EXPECT_EQ(server_->Terminate(absl::Seconds(15)), 0) << server_->Log();
  EXPECT_EQ(client->Stop(0, absl::Seconds(10)), 1);
  EXPECT_THAT(client->Log(), HasSubstr("ERROR 2013"));  // lost connection
}

TEST_F(MysqlProtocolTest, NonLoopbackWithoutAUserDoesNotStart) {
  auto server = Msgqd::Start(
      *db_, {"--databases=msgq", "--mysql_protocol_listen=0.0.0.0:0"});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(),
              HasSubstr("is not a loopback address: set "
                        "--mysql_protocol_user and "
                        "--mysql_protocol_password_file"));
}

}  // namespace
}  // namespace msgq::testing
