// TLS and mTLS on msgqd's gRPC port, certificate rotation and the startup
// checks of the TLS flags and of the key's permissions, against a real
// msgqd and MariaDB.
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SecurityTlsTest : public SecurityTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(SecurityTest::SetUp());
    ASSERT_TRUE(MakeTestCertificates(files_->path()))
        << ReadText(Path("openssl.log"));
    // The served certificate and key, replaced by the rotation test.
    ReplaceFile(Path("tls.pem"), ReadText(Path("server1.pem")));
    ReplaceFile(Path("tls.key"), ReadText(Path("server1.key")));
  }
  std::vector<std::string> TlsArgs() {
    return {"--tls_cert=" + Path("tls.pem"), "--tls_key=" + Path("tls.key"),
            "--tls_reload_interval=1s", "--http_listen="};
  }
  std::unique_ptr<v1::Messaging::Stub> TlsStub(const std::string& client = "") {
    return v1::Messaging::NewStub(
        TlsChannel(server_->address(), files_->path(), client));
  }
};

TEST_F(SecurityTlsTest, PlaintextClientFailsTlsClientWorks) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(StartServer(TlsArgs()));
  auto plain = v1::Messaging::NewStub(PlainChannel(server_->address()));
  v1::ListTablesResponse r;
  EXPECT_EQ(ListTables(plain.get(), "", &r).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  auto tls = TlsStub();
  ASSERT_NO_FATAL_FAILURE(WaitForTable(tls.get(), "q", ""));
  std::string cn;
  ASSERT_TRUE(ListTables(tls.get(), "", &r, &cn).ok());
  EXPECT_EQ(cn, "msgqd-1");
  EXPECT_TRUE(OpenStream(tls.get(), "q", "").ok());
  // That stream is gone before the rows come: with row images a row goes
  // out the moment its commit is read, and one written to a stream still
  // being cancelled comes back only after its ack wait.
  ASSERT_TRUE(
      Eventually([&] { return FindTable(tls.get(), "q").subscribers() == 0; },
                 absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  StreamCollector s(tls.get(), "q", "msgq");
  ASSERT_TRUE(s.WaitForRows(2, absl::Seconds(20))) << server_->Log();
  EXPECT_THAT(s.ids(), ElementsAre("1", "2"));
}

TEST_F(SecurityTlsTest, MutualTlsNeedsACertificateOfTheClientCa) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("r"));
  ReplaceFile(Path("policy"), "reader msgq/q stream\n");
  std::vector<std::string> args = TlsArgs();
  args.push_back("--tls_client_ca=" + Path("ca.pem"));
  args.push_back("--auth_policy_file=" + Path("policy"));
  ASSERT_NO_FATAL_FAILURE(StartServer(args));
  auto reader = TlsStub("reader");
  ASSERT_NO_FATAL_FAILURE(WaitForTable(reader.get(), "q", ""));
  v1::ListTablesResponse r;
  // No client certificate, or one of another CA: the handshake fails.
  auto anonymous = TlsStub();
  EXPECT_EQ(ListTables(anonymous.get(), "", &r).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  auto intruder = TlsStub("intruder");
  EXPECT_EQ(ListTables(intruder.get(), "", &r).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // The certificate's CN is the principal the policy grants.
  EXPECT_TRUE(OpenStream(reader.get(), "q", "").ok());
  grpc::Status denied = OpenStream(reader.get(), "r", "");
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(),
            "permission denied: 'reader' may not stream msgq.r");
  ASSERT_TRUE(ListTables(reader.get(), "", &r).ok());
  EXPECT_THAT(TableNames(r), ElementsAre("q"));
}

TEST_F(SecurityTlsTest, RotatedCertificateServesNewConnections) {
  ASSERT_NO_FATAL_FAILURE(StartServer(TlsArgs()));
  v1::ListTablesResponse r;
  std::string cn;
  ASSERT_TRUE(ListTables(TlsStub().get(), "", &r, &cn).ok());
  EXPECT_EQ(cn, "msgqd-1");
  ReplaceFile(Path("tls.key"), ReadText(Path("server2.key")));
  ReplaceFile(Path("tls.pem"), ReadText(Path("server2.pem")));
  EXPECT_TRUE(Eventually(
      [&] {
        std::string now;
        return ListTables(TlsStub().get(), "", &r, &now).ok() &&
               now == "msgqd-2";
      },
      absl::Seconds(15)))
      << server_->Log();
}

// A TLS key that group or others may read: msgqd exits 2 naming the key
// and its mode, and starts once it is 0600.
// The suite `openssl s_client` agrees with 127.0.0.1:`port` (over the
// MySQL protocol's STARTTLS with `mysql`) offering `version` ("-tls1_2")
// and `ciphers`; "" when the handshake fails.
std::string AgreedCipher(int port, bool mysql, const std::string& version,
                         const std::string& ciphers) {
  const std::string cmd = absl::StrCat(
      "timeout 20 openssl s_client -connect 127.0.0.1:", port,
      mysql ? " -starttls mysql " : " ", version,
      ciphers.empty() ? "" : absl::StrCat(" -cipher '", ciphers, "'"),
      " </dev/null 2>&1");
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return "";
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  pclose(f);
  // "New, TLSv1.2, Cipher is X", or "New, (NONE), Cipher is (NONE)".
  const std::string kLine = ", Cipher is ";
  const size_t at = out.find(kLine);
  if (at == std::string::npos) return "";
  std::string cipher = out.substr(at + kLine.size());
  cipher = cipher.substr(0, cipher.find('\n'));
  return cipher == "(NONE)" ? "" : cipher;
}

// Every TLS port (gRPC, HTTPS, the MySQL protocol's STARTTLS) agrees on
// TLS 1.2 with an ECDHE key exchange and AES-GCM, or TLS 1.3, and on
// nothing older or weaker: not TLS 1.1, not a CBC suite, not a key
// exchange without forward secrecy.
TEST_F(SecurityTlsTest, EveryPortSpeaksOnlyTls12PlusWithAeadSuites) {
  std::vector<std::string> args = TlsArgs();
  args.back() = "--http_listen=127.0.0.1:0";
  args.push_back("--mysql_protocol_listen=127.0.0.1:0");
  ASSERT_NO_FATAL_FAILURE(StartServer(args));
  const std::string log = server_->Log();
  int http = 0, mysql = 0;
  for (auto [line, port] :
       {std::pair<std::string, int*>{"msgqd http on 127.0.0.1:", &http},
        {"msgqd mysql protocol on 127.0.0.1:", &mysql}}) {
    const size_t at = log.find(line);
    ASSERT_NE(at, std::string::npos) << log;
    const std::string rest = log.substr(at + line.size());
    ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find('\n')), port)) << log;
  }
  const struct {
    const char* name;
    int port;
    bool mysql;
  } ports[] = {{"gRPC", server_->port(), false},
               {"HTTPS", http, false},
               {"MySQL protocol", mysql, true}};
  for (const auto& p : ports) {
    SCOPED_TRACE(p.name);
    // SECLEVEL=0: the client would refuse these itself otherwise.
    EXPECT_EQ(AgreedCipher(p.port, p.mysql, "-tls1_1", "ALL:@SECLEVEL=0"), "");
    EXPECT_EQ(AgreedCipher(p.port, p.mysql, "-tls1_2",
                           "ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA384:"
                           "AES128-GCM-SHA256:AES128-SHA:@SECLEVEL=0"),
              "");
    EXPECT_EQ(
        AgreedCipher(p.port, p.mysql, "-tls1_2", "ECDHE-RSA-AES128-GCM-SHA256"),
        "ECDHE-RSA-AES128-GCM-SHA256");
    EXPECT_EQ(AgreedCipher(p.port, p.mysql, "-tls1_3", ""),
              "TLS_AES_256_GCM_SHA384");
  }
}

TEST_F(SecurityTlsTest, AKeyOthersMayReadRefusesToStart) {
  std::vector<std::string> args = TlsArgs();
  args.push_back("--databases=msgq");
  ASSERT_EQ(chmod(Path("tls.key").c_str(), 0644), 0);
  std::string log;
  EXPECT_EQ(Msgqd::RunUntilExit(*db_, args, absl::Seconds(30), &log), 2) << log;
  EXPECT_THAT(log, HasSubstr("TLS key " + Path("tls.key") +
                             ": mode 0644 lets group or others read it; "
                             "chmod 600 it\n"));
  ASSERT_EQ(chmod(Path("tls.key").c_str(), 0600), 0);
  ASSERT_NO_FATAL_FAILURE(StartServer(args));
  v1::ListTablesResponse r;
  EXPECT_TRUE(ListTables(TlsStub().get(), "", &r).ok());
}

TEST_F(SecurityTlsTest, BadTlsFlagsRefuseToStart) {
  auto expect_refused = [&](std::vector<std::string> args,
                            const std::string& message) {
    args.push_back("--databases=msgq");
    absl::StatusOr<std::unique_ptr<Msgqd>> s = Msgqd::Start(*db_, args);
    ASSERT_FALSE(s.ok()) << "started with " << args[0];
    EXPECT_THAT(s.status().message(), HasSubstr(message));
  };
  expect_refused({"--tls_cert=" + Path("tls.pem")},
                 "--tls_cert and --tls_key go together: give both or neither");
  expect_refused(
      {"--tls_cert=" + Path("tls.pem"), "--tls_key=" + Path("server2.key")},
      "--tls_key=" + Path("server2.key") +
          ": is not the key of the certificate in " + Path("tls.pem"));
  expect_refused(
      {"--tls_cert=" + Path("nope.pem"), "--tls_key=" + Path("tls.key")},
      "--tls_cert=" + Path("nope.pem") + ": cannot be read");
  expect_refused({"--tls_client_ca=" + Path("ca.pem")},
                 "--tls_client_ca needs --tls_cert and --tls_key");
}

}  // namespace
}  // namespace msgq::testing
