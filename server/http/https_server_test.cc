// HttpServer with HTTPS, against OpenSSL clients over TCP and throwaway
// certificates: requests served over TLS without the Host check, plain HTTP
// and a silent client dropped without an answer, client certificates accepted
// only from the configured CA, a rotated certificate served to new
// connections (a key without its certificate keeps the old pair), and a
// missing key file refused at Start with INVALID_ARGUMENT.
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http/http_server.h"
#include "server/http/http_server_test_util.h"
#include "server/tls/tls_test_util.h"

namespace msgq::http_test {
namespace {

using ::testing::StartsWith;
using tls::testing::TestClient;

// The plain-socket ReadAll, which the TLS overload below would otherwise hide.
using http_test::ReadAll;

// Everything until the server closes.
std::string ReadAll(TestClient& client) {
  std::string out;
  for (std::string s = client.Read(); !s.empty(); s = client.Read()) out += s;
  return out;
}

class HttpsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(tls::testing::MakeTempDir());
    ASSERT_TRUE(tls::testing::MakeCertificates(*certs_)) << *certs_;
  }
  static void TearDownTestSuite() {
    tls::testing::RemoveTempDir(*certs_);
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override {
    dir_ = tls::testing::MakeTempDir();
    tls::testing::CopyFile(*certs_ + "/server1.pem", dir_ + "/tls.pem");
    tls::testing::CopyFile(*certs_ + "/server1.key", dir_ + "/tls.key");
  }
  void TearDown() override {
    server_.reset();
    tls::testing::RemoveTempDir(dir_);
  }
  void Start(HttpServer::Options options = {},
             const std::string& client_ca = "") {
    options.tls = tls::TlsServerFiles{dir_ + "/tls.pem", dir_ + "/tls.key",
                                      client_ca, absl::ZeroDuration()};
    auto server = HttpServer::Start(
        "127.0.0.1:0",
        {{"/hello",
          [](const HttpRequest& r) {
            return HttpResponse{200, "text/plain", "hi " + r.body};
          }}},
        options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_TRUE(server_->tls());
  }
  // A request over TLS presenting `client` (a certificate name, or none):
  // the response, "" when the handshake or the exchange failed.
  std::string Exchange(const std::string& client = "",
                       std::string* server_cn = nullptr) {
    TestClient c(Connect(server_->port()), *certs_, "ca", client);
    if (!c.Connect()) return "";
    if (server_cn != nullptr) *server_cn = c.ServerCommonName();
    if (!c.Write(kPost)) return "";
    return ReadAll(c);
  }
  static constexpr char kPost[] =
      "POST /hello HTTP/1.1\r\nHost: evil.example\r\nContent-Length: "
      "3\r\n\r\nabc";

  static std::string* certs_;
  std::string dir_;
  std::unique_ptr<HttpServer> server_;
};
std::string* HttpsServerTest::certs_ = nullptr;

TEST_F(HttpsServerTest, ServesRequestsOverTlsWithoutAHostCheck) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::string cn;
  const std::string r = Exchange("", &cn);
  EXPECT_EQ(cn, "msgqd-1");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 200 OK");
  EXPECT_EQ(Body(r), "hi abc");
}

TEST_F(HttpsServerTest, PlainHttpGetsNoAnswer) {
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_EQ(
      Fetch(server_->port(), "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"),
      "");
}

TEST_F(HttpsServerTest, ASilentClientIsDroppedAtTheRequestDeadline) {
  HttpServer::Options options;
  options.request_timeout = absl::Milliseconds(300);
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const int fd = Connect(server_->port());
  const absl::Time start = absl::Now();
  EXPECT_EQ(ReadAll(fd), "");  // EOF: no 408 without a handshake
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  close(fd);
}

TEST_F(HttpsServerTest, ClientCertificatesOfTheCaOnly) {
  ASSERT_NO_FATAL_FAILURE(Start({}, *certs_ + "/ca.pem"));
  EXPECT_EQ(Exchange(), "");
  EXPECT_EQ(Exchange("intruder"), "");
  EXPECT_EQ(StatusLine(Exchange("reader")), "HTTP/1.1 200 OK");
}

TEST_F(HttpsServerTest, TheRotatedCertificateServesNewConnections) {
  ASSERT_NO_FATAL_FAILURE(Start());  // reload interval 0: every handshake
  std::string cn;
  ASSERT_EQ(StatusLine(Exchange("", &cn)), "HTTP/1.1 200 OK");
  EXPECT_EQ(cn, "msgqd-1");
  // A key without its certificate: the old pair stays.
  tls::testing::CopyFile(*certs_ + "/server2.key", dir_ + "/tls.key");
  ASSERT_EQ(StatusLine(Exchange("", &cn)), "HTTP/1.1 200 OK");
  EXPECT_EQ(cn, "msgqd-1");
  tls::testing::CopyFile(*certs_ + "/server2.pem", dir_ + "/tls.pem");
  ASSERT_EQ(StatusLine(Exchange("", &cn)), "HTTP/1.1 200 OK");
  EXPECT_EQ(cn, "msgqd-2");
}

TEST_F(HttpsServerTest, BadFilesAreInvalidAtStart) {
  HttpServer::Options options;
  options.tls = tls::TlsServerFiles{dir_ + "/tls.pem", dir_ + "/missing.key",
                                    "", absl::Seconds(1)};
  auto server = HttpServer::Start("127.0.0.1:0", {}, options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()),
              StartsWith(absl::StrCat("TLS key ", dir_, "/missing.key: ")));
}

}  // namespace
}  // namespace msgq::http_test
