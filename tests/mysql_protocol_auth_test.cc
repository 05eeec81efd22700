// Who may stream over msgqd's MySQL-protocol port
// (docs/mysql-protocol.md#identity-policy-and-tls): with --auth_tokens_file the
// client gives its gRPC bearer token as the password (mysql_clear_password),
// the user name is the token's principal, and `stream * from T` needs the
// policy's `stream` action on T, as a gRPC MessageStream does. The real mariadb
// client, Connector/C and MySQLdb.
#include <ifaddrs.h>
#include <mysql.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/mysql_protocol_fixture.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Row(int id) { return absl::StrCat(id, "\t{\"n\": ", id, "}"); }

// An IPv4 address of this host that is not loopback; empty if none.
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const uint32_t ip =
        ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    if ((ip >> 24) == 127) continue;
    found = absl::StrCat(ip >> 24, ".", (ip >> 16) & 255, ".", (ip >> 8) & 255,
                         ".", ip & 255);
  }
  freeifaddrs(list);
  return found;
}

class MysqlProtocolAuthTest : public MysqlProtocolTest {
 protected:
  // Tables a and b; tokens "tok-worker" (worker: stream a) and "tok-ops"
  // (ops: everything); the client certificate "reader" may stream a.
  void StartWithTokens(std::vector<std::string> extra = {},
                       const std::string& host = "127.0.0.1") {
    ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
    ASSERT_NO_FATAL_FAILURE(CreateTable("b"));
    auto dir = launch::OwnedDir::Create("msgq-test-myauth");
    ASSERT_TRUE(dir.ok()) << dir.status();
    files_ = *std::move(dir);
    ReplaceFile(Path("tokens"), TokenLine("tok-worker", "worker") +
                                    TokenLine("tok-ops", "ops"));
    ReplaceFile(Path("policy"),
                "worker msgq/a stream\nreader msgq/a stream\nops */* *\n");
    extra.push_back("--auth_tokens_file=" + Path("tokens"));
    extra.push_back("--auth_policy_file=" + Path("policy"));
    extra.push_back("--auth_reload_interval=100ms");
    ASSERT_NO_FATAL_FAILURE(
        StartWithMysqlProtocol(extra, /*with_user=*/false, host));
    if (!certs_.empty()) {
      // gRPC has TLS too.
      stub_ = v1::Messaging::NewStub(
          TlsChannel(server_->address(), certs_, "reader"));
    }
    ASSERT_TRUE(Eventually(
        [&] {
          v1::ListTablesResponse r;
          return ListTables(stub_.get(), "tok-ops", &r).ok() &&
                 r.tables_size() == 2 && r.tables(0).loaded() &&
                 r.tables(1).loaded();
        },
        absl::Seconds(20)))
        << server_->Log();
  }
  // Test certificates (security_fixture.h) in certs_ and the flags of
  // TLS with them (and mTLS with `client_ca`).
  std::vector<std::string> TlsFlags(bool client_ca = false) {
    auto dir = launch::OwnedDir::Create("msgq-test-mycerts");
    EXPECT_TRUE(dir.ok()) << dir.status();
    if (!dir.ok()) return {};
    certs_dir_ = *std::move(dir);
    certs_ = certs_dir_->path();
    EXPECT_TRUE(MakeTestCertificates(certs_));
    std::vector<std::string> flags = {"--tls_cert=" + certs_ + "/server1.pem",
                                      "--tls_key=" + certs_ + "/server1.key"};
    if (client_ca) flags.push_back("--tls_client_ca=" + certs_ + "/ca.pem");
    return flags;
  }
  std::string Path(const std::string& name) const {
    return files_->path() + "/" + name;
  }
  // A libmariadb connection over TCP logged in as `user` with `token`;
  // null (and a test failure) when the login fails.
  MYSQL* Connect(const std::string& user, const std::string& token) {
    MYSQL* m = mysql_init(nullptr);
    if (mysql_real_connect(m, "127.0.0.1", user.c_str(), token.c_str(), "msgq",
                           port_, nullptr, 0) == nullptr) {
      ADD_FAILURE() << mysql_error(m);
      mysql_close(m);
      return nullptr;
    }
    return m;
  }
  int Subscribers(const std::string& table) {
    v1::ListTablesResponse r;
    if (!ListTables(stub_.get(), "tok-ops", &r).ok()) return -1;
    for (const auto& t : r.tables()) {
      if (t.name() == table) return t.subscribers();
    }
    return -1;
  }

  std::unique_ptr<launch::OwnedDir> files_;
  std::unique_ptr<launch::OwnedDir> certs_dir_;
  std::string certs_;
};

TEST_F(MysqlProtocolAuthTest, TokenAsPasswordStreamsRows) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens());
  auto client = StartMariadb("stream * from a", "tok-worker", {"-uworker"});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForLines(*client, 1)) << client->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("a", 1, 2));
  ASSERT_TRUE(WaitForLines(*client, 3)) << client->Log();
  EXPECT_THAT(ClientLines(*client), ElementsAre("id\tmessage", Row(1), Row(2)));
  EXPECT_EQ(Subscribers("a"), 1);
  client->Stop(SIGKILL, absl::Seconds(5));
  // The token never reaches the log.
  EXPECT_THAT(server_->Log(), Not(HasSubstr("tok-")));
}

TEST_F(MysqlProtocolAuthTest, PythonMysqldbWithAToken) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens());
  auto child = launch::ChildProcess::Start(
      {"/usr/bin/python3", MSGQ_TESTS_DIR "/mysql_protocol_sscursor.py",
       std::to_string(port_), "ops", "tok-ops", "b", "2"},
      db_->dir() + "/python.log");
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(WaitForLines(**child, 1)) << (*child)->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("b", 1, 2));
  EXPECT_EQ((*child)->Stop(0, absl::Seconds(20)), 0) << (*child)->Log();
  EXPECT_THAT(ClientLines(**child),
              ElementsAre("columns: id,message", Row(1), Row(2)));
}

TEST_F(MysqlProtocolAuthTest, WrongOrMissingTokenOrOtherUserIs1045) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens());
  auto wrong = StartMariadb("select 1", "tok-wrong", {"-uworker"});
  ASSERT_NE(wrong, nullptr);
  EXPECT_EQ(wrong->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(wrong->Log(),
              HasSubstr("ERROR 1045 (28000): Access denied for user 'worker' "
                        "(using password: YES)"));
  auto missing = StartMariadb("select 1", "", {"-uworker"});
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(missing->Log(),
              HasSubstr("ERROR 1045 (28000): Access denied for user 'worker' "
                        "(using password: NO)"));
  // A valid token under another principal's name.
  auto other = StartMariadb("select 1", "tok-worker", {"-uops"});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(other->Log(),
              HasSubstr("ERROR 1045 (28000): Access denied for user 'ops' "
                        "(using password: YES)"));
  // A client offering mysql_native_password is switched to clear text;
  // a password that is no token is refused.
  auto raw = RawClient::Connect(port_);
  ASSERT_TRUE(raw.ok());
  auto answer = (*raw)->Login("worker", kPassword);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->payload, std::string("\xfemysql_clear_password\0", 22));
  ASSERT_TRUE(
      (*raw)->Send(uint8_t(answer->seq + 1), std::string(kPassword) + '\0'));
  auto refused = (*raw)->Read();
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(ErrCode(*refused), 1045);
  EXPECT_TRUE((*raw)->WaitClosed(absl::Seconds(5)));
  EXPECT_THAT(server_->Log(), Not(HasSubstr("tok-")));
}

// worker may stream a, not b: 1142 on b, the connection stays usable, and a
// policy reload applies to the next statement.
TEST_F(MysqlProtocolAuthTest, StreamWithoutTheStreamActionIs1142) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens());
  MYSQL* m = Connect("worker", "tok-worker");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(mysql_query(m, "stream * from b"), 0);
  EXPECT_EQ(mysql_errno(m), 1142u);
  EXPECT_STREQ(mysql_sqlstate(m), "42000");
  EXPECT_STREQ(mysql_error(m),
               "STREAM command denied to user 'worker' for table 'msgq.b'");
  EXPECT_EQ(Subscribers("b"), 0);
  ASSERT_EQ(mysql_query(m, "select 1"), 0) << mysql_error(m);
  MYSQL_RES* res = mysql_store_result(m);
  ASSERT_NE(res, nullptr);
  MYSQL_ROW row = mysql_fetch_row(res);
  ASSERT_NE(row, nullptr);
  EXPECT_STREQ(row[0], "1");
  mysql_free_result(res);

  ReplaceFile(Path("policy"), "worker msgq/* stream\nops */* *\n");
  EXPECT_TRUE(Eventually(
      [&] {
        if (mysql_query(m, "stream * from b") == 0) return true;
        EXPECT_EQ(mysql_errno(m), 1142u);
        return false;
      },
      absl::Seconds(10)));
  EXPECT_TRUE(
      Eventually([&] { return Subscribers("b") == 1; }, absl::Seconds(10)));
  shutdown(static_cast<int>(mysql_get_socket(m)), SHUT_RDWR);
  mysql_close(m);

  auto a = StartMariadb("stream * from a", "tok-worker", {"-uworker"});
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitForLines(*a, 1)) << a->Log();
  EXPECT_THAT(ClientLines(*a), ElementsAre("id\tmessage"));
}

// A token removed from the tokens file ends the stream of a connection that
// logged in with it (ERR 1045) and refuses the next statement of another
// (ERR 1045, then the connection is closed); a removed grant ends the
// streams it allowed (ERR 1142).
TEST_F(MysqlProtocolAuthTest, RevokedTokenOrGrantEndsStreamsAndSessions) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens());
  MYSQL* m = Connect("worker", "tok-worker");
  ASSERT_NE(m, nullptr);
  auto worker = StartMariadb("stream * from a", "tok-worker", {"-uworker"});
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(WaitForLines(*worker, 1)) << worker->Log();
  auto ops = StartMariadb("stream * from a", "tok-ops", {"-uops"});
  ASSERT_NE(ops, nullptr);
  ASSERT_TRUE(WaitForLines(*ops, 1)) << ops->Log();
  ASSERT_TRUE(
      Eventually([&] { return Subscribers("a") == 2; }, absl::Seconds(10)));

  ReplaceFile(Path("tokens"), TokenLine("tok-ops", "ops"));
  EXPECT_EQ(worker->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(worker->Log(),
              HasSubstr("ERROR 1045 (28000) at line 1: credentials revoked: "
                        "the bearer token of 'worker' is no longer in the "
                        "tokens file"));
  EXPECT_NE(mysql_query(m, "select 1"), 0);
  EXPECT_EQ(mysql_errno(m), 1045u);
  EXPECT_STREQ(mysql_error(m),
               "credentials revoked: the bearer token of 'worker' is no "
               "longer in the tokens file");
  EXPECT_NE(mysql_query(m, "select 1"), 0);
  EXPECT_NE(mysql_errno(m), 1045u) << "the connection was not closed";
  mysql_close(m);

  ReplaceFile(Path("policy"), "ops */* admin\n");
  EXPECT_EQ(ops->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(ops->Log(),
              HasSubstr("ERROR 1142 (42000) at line 1: permission denied: "
                        "'ops' may not stream msgq.a"));
  EXPECT_TRUE(
      Eventually([&] { return Subscribers("a") == 0; }, absl::Seconds(10)));
}

// MySQL streams count against --max_streams_per_principal like gRPC ones;
// the slot comes back when the stream ends.
TEST_F(MysqlProtocolAuthTest, StreamsCountAgainstThePrincipalsLimit) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens({"--max_streams_per_principal=1"}));
  auto first = StartMariadb("stream * from a", "tok-worker", {"-uworker"});
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(WaitForLines(*first, 1)) << first->Log();
  auto second = StartMariadb("stream * from a", "tok-worker", {"-uworker"});
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(second->Log(),
              HasSubstr("ERROR 1226 (42000) at line 1: 'worker' already has 1 "
                        "open streams (--max_streams_per_principal)"));
  first->Stop(SIGKILL, absl::Seconds(5));
  ASSERT_TRUE(
      Eventually([&] { return Subscribers("a") == 0; }, absl::Seconds(10)));
  auto third = StartMariadb("stream * from a", "tok-worker", {"-uworker"});
  ASSERT_NE(third, nullptr);
  ASSERT_TRUE(WaitForLines(*third, 1)) << third->Log();
  EXPECT_THAT(ClientLines(*third), ElementsAre("id\tmessage"));
}

// A clear-text token is refused on a connection that is neither TLS nor
// loopback, whatever the token.
TEST_F(MysqlProtocolAuthTest, ClearTextOnlyOnLoopback) {
  const std::string address = NonLoopbackAddress();
  if (address.empty()) GTEST_SKIP() << "no non-loopback IPv4 address";
  ASSERT_NO_FATAL_FAILURE(StartWithTokens({}, "0.0.0.0"));
  auto remote =
      StartMariadb("select 1", "tok-worker", {"-uworker", "-h", address});
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(remote->Log(),
              HasSubstr("ERROR 1045 (28000): Access denied for user 'worker': "
                        "a token is sent in clear text, so msgq takes it only "
                        "over TLS or from a loopback address"));
  auto local = StartMariadb("select 1", "tok-worker", {"-uworker", "-N"});
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->Stop(0, absl::Seconds(20)), 0) << local->Log();
  EXPECT_THAT(ClientLines(*local), ElementsAre("1"));
}

TEST_F(MysqlProtocolAuthTest, TokensAndAMysqlProtocolUserDoNotGoTogether) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens());
  EXPECT_EQ(server_->Terminate(absl::Seconds(15)), 0);
  auto server = Msgqd::Start(
      *db_, {"--databases=msgq", "--mysql_protocol_listen=127.0.0.1:0",
             "--auth_tokens_file=" + Path("tokens"),
             absl::StrCat("--mysql_protocol_user=", kUser),
             "--mysql_protocol_password_file=" + password_file_});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(),
              HasSubstr("--mysql_protocol_user does not go with "
                        "--auth_tokens_file"));
}

// With --tls_cert/--tls_key the port offers TLS (CLIENT_SSL): the mariadb
// client with --ssl streams; by default a client without TLS is refused.
TEST_F(MysqlProtocolAuthTest, TlsStreamsAndPlainIsRefusedByDefault) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens(TlsFlags()));
  const std::string& dir = certs_;
  auto tls = StartMariadb("stream * from a", "tok-worker",
                          {"-uworker", "--ssl", "--ssl-ca=" + dir + "/ca.pem",
                           "--ssl-verify-server-cert"});
  ASSERT_NE(tls, nullptr);
  ASSERT_TRUE(WaitForLines(*tls, 1)) << tls->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("a", 1, 2));
  ASSERT_TRUE(WaitForLines(*tls, 3)) << tls->Log();
  EXPECT_THAT(ClientLines(*tls), ElementsAre("id\tmessage", Row(1), Row(2)));
  tls->Stop(SIGKILL, absl::Seconds(5));

  auto plain =
      StartMariadb("select 1", "tok-worker", {"-uworker", "--skip-ssl"});
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(plain->Log(),
              HasSubstr("ERROR 3159 (HY000): Connections using insecure "
                        "transport are prohibited: this port requires TLS "
                        "(--mysql_protocol_require_tls)"));
}

// Connector/C over TLS: the rows come on a connection with a cipher; with
// --mysql_protocol_require_tls=false a plain loopback client is let in too.
TEST_F(MysqlProtocolAuthTest, ConnectorCRowsArriveOverTls) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--mysql_protocol_require_tls=false");
  ASSERT_NO_FATAL_FAILURE(StartWithTokens(flags));
  const std::string& dir = certs_;
  ASSERT_NO_FATAL_FAILURE(InsertRange("b", 1, 1));
  MYSQL* m = mysql_init(nullptr);
  const std::string ca = dir + "/ca.pem";
  mysql_options(m, MYSQL_OPT_SSL_CA, ca.c_str());
  ASSERT_NE(mysql_real_connect(m, "127.0.0.1", "ops", "tok-ops", "msgq", port_,
                               nullptr, 0),
            nullptr)
      << mysql_error(m);
  const char* cipher = mysql_get_ssl_cipher(m);
  ASSERT_NE(cipher, nullptr);
  EXPECT_THAT(std::string(cipher), HasSubstr("TLS_AES"));
  ASSERT_EQ(mysql_query(m, "stream * from b"), 0) << mysql_error(m);
  MYSQL_RES* res = mysql_use_result(m);
  ASSERT_NE(res, nullptr);
  MYSQL_ROW row = mysql_fetch_row(res);
  ASSERT_NE(row, nullptr) << mysql_error(m);
  EXPECT_STREQ(row[0], "1");
  EXPECT_STREQ(row[1], "{\"n\": 1}");
  shutdown(static_cast<int>(mysql_get_socket(m)), SHUT_RDWR);
  mysql_free_result(res);
  mysql_close(m);

  auto plain =
      StartMariadb("select 1", "tok-worker", {"-uworker", "-N", "--skip-ssl"});
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->Stop(0, absl::Seconds(20)), 0) << plain->Log();
  EXPECT_THAT(ClientLines(*plain), ElementsAre("1"));
}

// With --tls_client_ca, a client certificate's common name is a principal,
// as on the gRPC port: no password needed.
TEST_F(MysqlProtocolAuthTest, ClientCertificateIsAPrincipal) {
  ASSERT_NO_FATAL_FAILURE(StartWithTokens(TlsFlags(/*client_ca=*/true)));
  const std::string& dir = certs_;
  auto client =
      StartMariadb("stream * from a", "",
                   {"-ureader", "--ssl", "--ssl-ca=" + dir + "/ca.pem",
                    "--ssl-cert=" + dir + "/reader.pem",
                    "--ssl-key=" + dir + "/reader.key"});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForLines(*client, 1)) << client->Log();
  EXPECT_THAT(ClientLines(*client), ElementsAre("id\tmessage"));
  client->Stop(SIGKILL, absl::Seconds(5));
  // The certificate's name is the user name to give.
  auto other = StartMariadb("select 1", "",
                            {"-uworker", "--ssl", "--ssl-ca=" + dir + "/ca.pem",
                             "--ssl-cert=" + dir + "/reader.pem",
                             "--ssl-key=" + dir + "/reader.key"});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->Stop(0, absl::Seconds(20)), 1);
  EXPECT_THAT(other->Log(), HasSubstr("ERROR 1045 (28000)"));
}

}  // namespace
}  // namespace msgq::testing
