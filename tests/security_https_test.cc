// HTTPS on msgqd's HTTP port
// (docs/security.md#the-http-port-metrics-health-console): with
// --tls_cert/--tls_key the metrics, health pages and the console (and its
// token-checked /api) are served over TLS only, with --tls_client_ca only to
// clients with a certificate, and the certificate rotates like the gRPC port's.
// Clients: the curl CLI and raw sockets, against a real msgqd and MariaDB.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http_fixture.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct CurlResult {
  int exit_code = -1;
  std::string out;  // "-w" code line then the body (stdout)
  std::string err;  // curl -v's trace (stderr)
};

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class SecurityHttpsTest : public SecurityTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(SecurityTest::SetUp());
    ASSERT_TRUE(MakeTestCertificates(files_->path()))
        << ReadText(Path("openssl.log"));
    ReplaceFile(Path("tls.pem"), ReadText(Path("server1.pem")));
    ReplaceFile(Path("tls.key"), ReadText(Path("server1.key")));
  }
  void StartTls(std::vector<std::string> extra = {}) {
    extra.push_back("--tls_cert=" + Path("tls.pem"));
    extra.push_back("--tls_key=" + Path("tls.key"));
    extra.push_back("--tls_reload_interval=1s");
    extra.push_back("--http_listen=127.0.0.1:0");
    ASSERT_NO_FATAL_FAILURE(StartServer(extra));
    port_ = HttpPortFromLog(server_->Log());
    ASSERT_NE(port_, 0) << server_->Log();
  }
  // curl `scheme`://127.0.0.1:PORT`path` trusting ca.pem; `args` extra.
  CurlResult Curl(const std::string& path, const std::string& args = "",
                  const std::string& scheme = "https") {
    CurlResult r;
    const std::string err = Path("curl.err");
    const std::string cmd =
        absl::StrCat("curl -sS -v --max-time 10 --cacert ", Path("ca.pem"),
                     " -w '%{http_code}\\n' -o ", Path("curl.body"), " ", args,
                     " '", scheme, "://127.0.0.1:", port_, path, "' 2>", err);
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out += ReadText(Path("curl.body"));
    std::remove(Path("curl.body").c_str());
    r.err = ReadText(err);
    return r;
  }

  int port_ = 0;
};

TEST_F(SecurityHttpsTest, ServesMetricsAndHealthOverHttpsOnly) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(StartTls());
  CurlResult health = Curl("/healthz");
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_EQ(health.out, "200\nok\n");
  EXPECT_THAT(health.err, HasSubstr("subject: CN=msgqd-1"));
  CurlResult metrics = Curl("/metrics");
  EXPECT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_THAT(metrics.out, StartsWith("200\n"));
  EXPECT_THAT(metrics.out, HasSubstr("msgq_build_info{"));
  // Plain HTTP to the TLS port: no HTTP answer, the connection is closed
  // (curl 52, empty reply) or reset with the request unread (curl 56).
  CurlResult plain = Curl("/healthz", "", "http");
  EXPECT_THAT(plain.exit_code, AnyOf(52, 56)) << plain.err;
  EXPECT_EQ(plain.out, "000\n");
}

TEST_F(SecurityHttpsTest, ConsoleAndItsApiWorkWithABearerToken) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ReplaceFile(Path("tokens"), TokenLine("tok-ops", "ops"));
  ASSERT_NO_FATAL_FAILURE(StartTls({"--auth_tokens_file=" + Path("tokens")}));
  CurlResult page = Curl("/");
  EXPECT_EQ(page.exit_code, 0) << page.err;
  EXPECT_THAT(page.out, StartsWith("200\n<!doctype html>"));
  CurlResult anonymous = Curl("/api/tables", "-H 'X-Msgq-Console: 1'");
  EXPECT_EQ(anonymous.out,
            "401\n{\"error\":\"missing or invalid credentials: send "
            "'authorization: Bearer <token>'\"}");
  ASSERT_TRUE(Eventually(
      [&] {
        return absl::StrContains(
            Curl("/api/tables",
                 "-H 'X-Msgq-Console: 1' -H 'Authorization: Bearer tok-ops'")
                .out,
            "\"name\":\"a\"");
      },
      absl::Seconds(20)))
      << server_->Log();
  // A POST with a body is served over TLS too.
  CurlResult redrive = Curl("/api/redrive?keyspace=msgq&table=a&all=1",
                            "-H 'X-Msgq-Console: 1' -H 'Authorization: "
                            "Bearer tok-ops' --data x=1");
  EXPECT_THAT(redrive.out, StartsWith("200\n")) << redrive.err;
}

TEST_F(SecurityHttpsTest, SilentClientsDoNotBlockOthers) {
  ASSERT_NO_FATAL_FAILURE(StartTls());
  // Silent connections (each holds only a thread of its own in
  // libmicrohttpd; tests/http_hostile_test.cc has the hostile variants).
  std::vector<int> silent;
  for (int i = 0; i < 8; ++i) {
    const int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
  }
  // One that starts a handshake and stops halfway.
  ASSERT_EQ(write(silent[0], "\x16\x03\x01\x02\x00\x01", 6), 6);
  const absl::Time start = absl::Now();
  CurlResult health = Curl("/healthz");
  EXPECT_EQ(health.out, "200\nok\n") << health.err;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  for (int fd : silent) close(fd);
}

TEST_F(SecurityHttpsTest, MutualTlsNeedsAClientCertificateOfTheCa) {
  ASSERT_NO_FATAL_FAILURE(StartTls({"--tls_client_ca=" + Path("ca.pem")}));
  CurlResult anonymous = Curl("/healthz");
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_EQ(anonymous.out, "000\n");
  CurlResult intruder =
      Curl("/healthz", absl::StrCat("--cert ", Path("intruder.pem"), " --key ",
                                    Path("intruder.key")));
  EXPECT_NE(intruder.exit_code, 0);
  EXPECT_EQ(intruder.out, "000\n");
  CurlResult reader =
      Curl("/healthz", absl::StrCat("--cert ", Path("reader.pem"), " --key ",
                                    Path("reader.key")));
  EXPECT_EQ(reader.exit_code, 0) << reader.err;
  EXPECT_EQ(reader.out, "200\nok\n");
  // The refusals are logged with the client's address and the reason (by
  // msgqd's log writer thread, which may come after curl's exit).
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string log = server_->Log();
        return log.find("HTTPS client 127.0.0.1:") != std::string::npos &&
               log.find(
                   ": TLS handshake failed: peer did not return a "
                   "certificate") != std::string::npos;
      },
      absl::Seconds(10)))
      << server_->Log();
}

TEST_F(SecurityHttpsTest, RotatedCertificateIsServedAfterTheReloadInterval) {
  ASSERT_NO_FATAL_FAILURE(StartTls());
  EXPECT_THAT(Curl("/healthz").err, HasSubstr("subject: CN=msgqd-1"));
  // The key first: until the certificate follows, the pair does not match
  // and the old one stays in service.
  ReplaceFile(Path("tls.key"), ReadText(Path("server2.key")));
  ReplaceFile(Path("tls.pem"), ReadText(Path("server2.pem")));
  EXPECT_TRUE(Eventually(
      [&] {
        CurlResult r = Curl("/healthz");
        return r.out == "200\nok\n" &&
               absl::StrContains(r.err, "subject: CN=msgqd-2");
      },
      absl::Seconds(10)))
      << server_->Log();
}

}  // namespace
}  // namespace msgq::testing
