// msgqd's side of MySQL security: the password never on the command line, TLS
// to MySQL, and a least-privilege MySQL user with exactly the GRANTs of
// docs/operations.md#the-mysql-user-msgqd-needs.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/log_wait.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Receives rows 1..n of `table`, acks them, and sees the purge delete them.
void DeliverAckAndPurge(PrivateMariaDb& db, v1::Messaging::Stub* stub,
                        const std::string& table, int n) {
  StreamCollector s(stub, table);
  ASSERT_TRUE(s.WaitForRows(n, absl::Seconds(20)));
  std::vector<std::string> ids = s.ids();
  int64_t acked = -1;
  grpc::Status status = AckIds(stub, table, ids, &acked);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(acked, n);
  EXPECT_TRUE(Eventually(
      [&] {
        return db.Scalar(absl::StrCat("SELECT COUNT(*) FROM msgq.`", table,
                                      "`")) == "0";
      },
      absl::Seconds(20)));
}

class MysqlSecurityTest : public MsgqTest {};

// The password comes from a file; a password given as a flag is hidden
// from /proc/PID/cmdline (what ps shows) once msgqd started.
TEST_F(MysqlSecurityTest, PasswordFromAFileAndHiddenFromPs) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  ASSERT_NO_FATAL_FAILURE(
      Exec("CREATE USER 'app'@'localhost' IDENTIFIED BY 's3cret-pw'"));
  ASSERT_NO_FATAL_FAILURE(Exec("GRANT ALL ON msgq.* TO 'app'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT REPLICATION SLAVE ON *.* TO 'app'@'localhost'"));
  auto dir = launch::OwnedDir::Create("msgq-test-pw");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string file = (*dir)->path() + "/password";
  WriteFile(file, "s3cret-pw\n");

  ASSERT_NO_FATAL_FAILURE(StartServer(
      {"--mysql_user=app", absl::StrCat("--mysql_password_file=", file)}));
  {
    StreamCollector s(stub_.get(), "q");
    ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(20)));
    EXPECT_THAT(s.ids(), ElementsAre("1", "2"));
  }
  EXPECT_EQ(server_->Terminate(), 0);

  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--mysql_user=app", "--mysql_password=s3cret-pw"}));
  const std::string cmdline =
      ReadFile(absl::StrCat("/proc/", server_->pid(), "/cmdline"));
  EXPECT_THAT(cmdline, HasSubstr("--mysql_password=xxxxxxxxx"));
  EXPECT_THAT(cmdline, Not(HasSubstr("s3cret")));
  // The password worked (rows 1 and 2 wait out their ack wait).
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(20)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 3, 4));
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(20))) << server_->Log();
  EXPECT_THAT(s.ids(), ElementsAre("3", "4"));
}

// msgqd, with the default flags (--leases), as a user with exactly the
// GRANTs of docs/operations.md#the-mysql-user-msgqd-needs: binlog
// delivery, acks and the purge all work, and nothing is denied.
TEST_F(MysqlSecurityTest, LeastPrivilegeUserServesEverything) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_purge_after=1,vt_poller_interval=1"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'msgqd'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT SELECT, UPDATE, DELETE ON msgq.* TO 'msgqd'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT REPLICATION SLAVE ON *.* TO 'msgqd'@'localhost'"));
  for (const char* table : {"msgq_leases", "msgq_instances"}) {
    ASSERT_NO_FATAL_FAILURE(
        Exec(absl::StrCat("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON "
                          "msgq.",
                          table, " TO 'msgqd'@'localhost'")));
  }
  ASSERT_NO_FATAL_FAILURE(StartServer({"--mysql_user=msgqd"}));
  ASSERT_TRUE(Eventually(
      [&] { return FindTable(stub_.get(), "q").discovery() == "binlog"; },
      absl::Seconds(20)))
      << server_->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  ASSERT_NO_FATAL_FAILURE(DeliverAckAndPurge(*db_, stub_.get(), "q", 5));
  EXPECT_EQ(FindTable(stub_.get(), "q").discovery(), "binlog");
  EXPECT_THAT(server_->Log(), Not(HasSubstr("denied")));
}

// Pausing needs INSERT and DELETE on msgq_paused, and CREATE only while it
// is missing (docs/operations.md#the-mysql-user-msgqd-needs): with the table
// made by an administrator, a user without CREATE pauses and resumes; with
// it missing, the pause is refused naming the CREATE it lacks.
TEST_F(MysqlSecurityTest, LeastPrivilegeUserPausesWithoutCreate) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'msgqd'@'localhost'"));
  // INSERT on the database: a table-level grant needs the table to exist.
  ASSERT_NO_FATAL_FAILURE(Exec(
      "GRANT SELECT, INSERT, UPDATE, DELETE ON msgq.* TO 'msgqd'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--mysql_user=msgqd", "--leases=false"}));
  ASSERT_TRUE(Eventually([&] { return FindTable(stub_.get(), "q").loaded(); },
                         absl::Seconds(20)))
      << server_->Log();
  auto set_paused = [&](bool paused) {
    grpc::ClientContext ctx;
    v1::SetPausedRequest request;
    request.set_keyspace("msgq");
    request.set_name("q");
    request.set_paused(paused);
    v1::SetPausedResponse response;
    return stub_->SetPaused(&ctx, request, &response);
  };
  const grpc::Status refused = set_paused(true);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("CREATE command denied"));

  ASSERT_NO_FATAL_FAILURE(Exec(
      "CREATE TABLE msgq.msgq_paused (keyspace VARCHAR(64) CHARACTER SET "
      "utf8mb4 COLLATE utf8mb4_bin NOT NULL, name VARCHAR(64) CHARACTER SET "
      "utf8mb4 COLLATE utf8mb4_bin NOT NULL, since BIGINT NOT NULL DEFAULT 0, "
      "instance VARCHAR(255) NOT NULL DEFAULT '', PRIMARY KEY (keyspace, "
      "name)) ENGINE=InnoDB"));
  const grpc::Status paused = set_paused(true);
  ASSERT_TRUE(paused.ok()) << paused.error_message();
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.msgq_paused"), "1");
  EXPECT_TRUE(FindTable(stub_.get(), "q").paused());
  const grpc::Status resumed = set_paused(false);
  ASSERT_TRUE(resumed.ok()) << resumed.error_message();
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.msgq_paused"), "0");
  EXPECT_FALSE(FindTable(stub_.get(), "q").paused());
}

// With --leases msgqd also creates and writes its lease tables: CREATE and
// INSERT on the database (docs/operations.md#the-mysql-user-msgqd-needs).
TEST_F(MysqlSecurityTest, LeastPrivilegeUserWithLeases) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_purge_after=1,vt_poller_interval=1"));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'msgqd'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON msgq.* TO "
           "'msgqd'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      Exec("GRANT REPLICATION SLAVE ON *.* TO 'msgqd'@'localhost'"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--mysql_user=msgqd", "--leases", "--lease_duration=2s"}));
  ASSERT_TRUE(Eventually(
      [&] {
        return FindTable(stub_.get(), "q").ownership().state() == "owner";
      },
      absl::Seconds(20)))
      << server_->Log();
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  ASSERT_NO_FATAL_FAILURE(DeliverAckAndPurge(*db_, stub_.get(), "q", 5));
  EXPECT_THAT(server_->Log(), Not(HasSubstr("denied")));
}

// A CA and a server certificate for 127.0.0.1 made with openssl in `dir`
// (ca.pem, server.pem, server.key), and a second, unrelated CA (other.pem).
bool MakeCertificates(const std::string& dir) {
  WriteFile(dir + "/san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  const std::string cmd = absl::StrReplaceAll(
      "cd DIR && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
      "-days 2 -subj /CN=msgq-test-ca && "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key "
      "-out other.pem -days 2 -subj /CN=msgq-other-ca && "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
      "-subj /CN=127.0.0.1 && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out server.pem -days 2 -extfile san.ext",
      {{"DIR", dir}});
  return system(("(" + cmd + ") >" + dir + "/openssl.log 2>&1").c_str()) == 0;
}

class MysqlTlsTest : public MsgqTest {
 protected:
  PrivateMariaDb::Options DbOptions() override {
    auto dir = launch::OwnedDir::Create("msgq-test-tls");
    EXPECT_TRUE(dir.ok()) << dir.status();
    if (!dir.ok()) return {};
    certs_ = *std::move(dir);
    EXPECT_TRUE(MakeCertificates(certs_->path()));
    const std::string d = certs_->path();
    return {.extra_args = {"--ssl-ca=" + d + "/ca.pem",
                           "--ssl-cert=" + d + "/server.pem",
                           "--ssl-key=" + d + "/server.key"}};
  }
  std::vector<std::string> Tcp(const std::string& mode,
                               const std::string& ca = "") {
    std::vector<std::string> args = {"--mysql_socket=",
                                     "--mysql_host=127.0.0.1",
                                     absl::StrCat("--mysql_port=", db_->port()),
                                     "--mysql_user=tls",
                                     "--mysql_ssl_mode=" + mode,
                                     "--binlog=false"};
    if (!ca.empty()) args.push_back("--mysql_ssl_ca=" + certs_->path() + ca);
    return args;
  }
  std::unique_ptr<launch::OwnedDir> certs_;
};

// The user may only connect over TLS: msgqd without TLS is refused, with
// an unrelated CA it refuses the server, with the right CA it serves.
TEST_F(MysqlTlsTest, VerifiedTlsServesPlaintextAndWrongCaDoNot) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  ASSERT_NO_FATAL_FAILURE(Exec("CREATE USER 'tls'@'127.0.0.1' REQUIRE SSL"));
  ASSERT_NO_FATAL_FAILURE(Exec("GRANT ALL ON msgq.* TO 'tls'@'127.0.0.1'"));

  ASSERT_NO_FATAL_FAILURE(StartServer(Tcp("disabled")));
  EXPECT_TRUE(
      LogShows(*server_, "Access denied for user 'tls'", absl::Seconds(20)))
      << server_->Log();
  EXPECT_EQ(FindTable(stub_.get(), "q").name(), "");
  EXPECT_EQ(server_->Terminate(), 0);

  ASSERT_NO_FATAL_FAILURE(StartServer(Tcp("verify_identity", "/other.pem")));
  EXPECT_TRUE(LogShows(*server_, "cannot connect to MySQL at 127.0.0.1",
                       absl::Seconds(20)))
      << server_->Log();
  EXPECT_EQ(FindTable(stub_.get(), "q").name(), "");
  EXPECT_EQ(server_->Terminate(), 0);

  ASSERT_NO_FATAL_FAILURE(StartServer(Tcp("verify_identity", "/ca.pem")));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(20))) << server_->Log();
  EXPECT_THAT(s.ids(), ElementsAre("1", "2"));
  // Logged in at all: the user REQUIREs SSL, so the session is encrypted.
}

}  // namespace
}  // namespace msgq::testing
