// HttpServer on libmicrohttpd: routes, parameters, the limits and what a
// client over each gets, the Host check, and HTTPS (rotation, client
// certificates), with raw sockets and OpenSSL clients over TCP.
#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/tls/tls_test_util.h"

namespace msgq {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using tls::testing::TestClient;

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// What a plain socket reads until EOF (or an error, e.g. a reset).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return out;
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// One exchange on a new connection: the whole response.
std::string Fetch(int port, const std::string& request) {
  const int fd = Connect(port);
  WriteAll(fd, request);
  std::string response = ReadAll(fd);
  close(fd);
  return response;
}

std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string Body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// Everything until the server closes.
std::string ReadAll(TestClient& client) {
  std::string out;
  for (std::string s = client.Read(); !s.empty(); s = client.Read()) out += s;
  return out;
}

std::map<std::string, HttpHandler> EchoRoutes() {
  std::map<std::string, HttpHandler> routes;
  routes["/"] = [](const HttpRequest&) {
    return HttpResponse{200, "text/html", "<p>home</p>"};
  };
  routes["/echo"] = [](const HttpRequest& r) {
    std::string ids;
    for (const std::string& id : r.Params("id")) absl::StrAppend(&ids, id, ";");
    auto header = r.headers.find("x-test");
    return HttpResponse{
        201, "text/plain",
        absl::StrCat(
            r.method, " ", r.path, " name=", r.Param("name").value_or("-"),
            " ids=", ids,
            " header=", header == r.headers.end() ? "-" : header->second)};
  };
  return routes;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServer::Options options = {}) {
    auto server = HttpServer::Start("127.0.0.1:0", EchoRoutes(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
  }
  std::string Get(const std::string& target, const std::string& host) {
    return Fetch(
        server_->port(),
        absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: ", host, "\r\n\r\n"));
  }
  std::string Local() const {
    return absl::StrCat("127.0.0.1:", server_->port());
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesExactPathsOnly) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string home = Get("/", Local());
  EXPECT_EQ(StatusLine(home), "HTTP/1.1 200 OK");
  EXPECT_THAT(home, HasSubstr("\r\nContent-Type: text/html\r\n"));
  EXPECT_THAT(home, HasSubstr("\r\nCache-Control: no-store\r\n"));
  EXPECT_THAT(home, HasSubstr("\r\nX-Content-Type-Options: nosniff\r\n"));
  EXPECT_THAT(home, HasSubstr("\r\nContent-Length: 11\r\n"));
  EXPECT_EQ(Body(home), "<p>home</p>");
  EXPECT_EQ(StatusLine(Get("/nope", Local())), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(StatusLine(Get("/echo/x", Local())), "HTTP/1.1 404 Not Found");
}

TEST_F(HttpServerTest, PassesQueryFormBodyAndHeaders) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string body = "id=3&id=a%20b+c";
  const std::string r = Fetch(
      server_->port(),
      absl::StrCat("POST /echo?name=x%2By&id=1 HTTP/1.1\r\nHost: localhost\r\n"
                   "X-Test: yes\r\n"
                   "Content-Type: application/x-www-form-urlencoded\r\n"
                   "Content-Length: ",
                   body.size(), "\r\n\r\n", body));
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 201 Created");
  EXPECT_EQ(Body(r), "POST /echo name=x+y ids=1;3;a b c; header=yes");
}

TEST_F(HttpServerTest, ChunkedBodiesAreRead) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string r = Fetch(
      server_->port(), absl::StrCat("POST /echo HTTP/1.1\r\nHost: localhost\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n"
                                    "4\r\nid=7\r\n5\r\n&id=8\r\n0\r\n\r\n"));
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 201 Created");
  EXPECT_EQ(Body(r), "POST /echo name=- ids=7;8; header=-");
}

TEST_F(HttpServerTest, RefusesLargeBodiesBeforeReadingThem) {
  HttpServer::Options options;
  options.max_body_bytes = 64;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  // Announced: 413 at once, the body never sent.
  const std::string r = Fetch(
      server_->port(),
      absl::StrCat("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: ",
                   65, "\r\n\r\n"));
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 413 Content Too Large") << r;
  EXPECT_EQ(Body(r), "request body too large (at most 64 bytes)\n");
  // Exactly the limit is fine.
  const std::string fits = Fetch(
      server_->port(),
      absl::StrCat("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: ",
                   64, "\r\n\r\n", "id=1&", std::string(59, 'x')));
  EXPECT_EQ(StatusLine(fits), "HTTP/1.1 201 Created");
  // Chunked past the limit: cut off without an answer.
  const std::string chunked = Fetch(
      server_->port(), absl::StrCat("POST /echo HTTP/1.1\r\nHost: localhost\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n41\r\n",
                                    std::string(65, 'x'), "\r\n0\r\n\r\n"));
  EXPECT_EQ(chunked, "");
}

TEST_F(HttpServerTest, HugeHeadersGet431) {
  HttpServer::Options options;
  options.connection_memory_bytes = 8192;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const std::string r =
      Fetch(server_->port(),
            absl::StrCat("GET /echo HTTP/1.1\r\nHost: localhost\r\nX-Big: ",
                         std::string(16384, 'b'), "\r\n\r\n"));
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 431 Request Header Fields Too Large")
      << r.substr(0, 200);
}

TEST_F(HttpServerTest, TooManyParametersGet400) {
  HttpServer::Options options;
  options.max_params = 3;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const std::string body = "id=3&id=4";
  const std::string request =
      absl::StrCat("POST /echo?id=1&id=2 HTTP/1.1\r\nHost: localhost\r\n",
                   "Content-Length: ", body.size(), "\r\n\r\n", body);
  const std::string r = Fetch(server_->port(), request);
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(Body(r),
            "bad request: more than 3 parameters in the query and form "
            "body\n");
  EXPECT_EQ(StatusLine(Get("/echo?id=1&id=2&id=3", "localhost")),
            "HTTP/1.1 201 Created");
}

TEST_F(HttpServerTest, HostMustNameThisServer) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const std::string host :
       {Local(), std::string("localhost"), std::string("LOCALHOST:1"),
        std::string("127.1.2.3"), std::string("[::1]:80")}) {
    SCOPED_TRACE(host);
    EXPECT_EQ(StatusLine(Get("/echo", host)), "HTTP/1.1 201 Created");
  }
  const std::string evil = Get("/echo", "evil.example");
  EXPECT_EQ(StatusLine(evil), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(Body(evil),
            "403 forbidden: Host 'evil.example' is not a name of this server "
            "(a guard against DNS rebinding); use localhost, an IP address, "
            "or a name given to msgqd's --http_allowed_hosts\n");
  // No Host: refused on HTTP/1.1, served on 1.0.
  const std::string none = Fetch(server_->port(), "GET /echo HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusLine(none), "HTTP/1.1 403 Forbidden") << none;
  EXPECT_EQ(StatusLine(Fetch(server_->port(), "GET /echo HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 201 Created");
}

TEST_F(HttpServerTest, ExtraAllowedHosts) {
  HttpServer::Options options;
  options.allowed_hosts = {"msgq.internal"};
  ASSERT_NO_FATAL_FAILURE(Start(options));
  EXPECT_EQ(StatusLine(Get("/echo", "msgq.internal:8080")),
            "HTTP/1.1 201 Created");
  EXPECT_EQ(StatusLine(Get("/echo", "other.internal")),
            "HTTP/1.1 403 Forbidden");
}

TEST_F(HttpServerTest, ConnectionsOverThePerAddressLimitGet429) {
  HttpServer::Options options;
  options.max_connections_per_address = 2;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const int held[2] = {Connect(server_->port()), Connect(server_->port())};
  // The server counts a connection once it accepted it.
  for (int i = 0; i < 200 && server_->connections() < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(server_->connections(), 2);
  const std::string r = Get("/echo", "localhost");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 429 Too Many Requests");
  EXPECT_EQ(Body(r),
            "too many connections (2 open from 127.0.0.1, "
            "--http_max_connections_per_address 2)\n");
  close(held[0]);
  close(held[1]);
  std::string after;
  for (int i = 0; i < 200; ++i) {
    after = Get("/echo", "localhost");
    if (StatusLine(after) == "HTTP/1.1 201 Created") break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(StatusLine(after), "HTTP/1.1 201 Created");
}

TEST_F(HttpServerTest, ConnectionsOverTheTotalLimitGet429) {
  HttpServer::Options options;
  options.max_connections = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const int held = Connect(server_->port());
  for (int i = 0; i < 200 && server_->connections() < 1; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const std::string r = Get("/echo", "localhost");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 429 Too Many Requests");
  EXPECT_EQ(Body(r),
            "too many connections (1 open, --http_max_connections 1)\n");
  close(held);
}

TEST_F(HttpServerTest, SlowRequestsGet408AtTheDeadline) {
  HttpServer::Options options;
  options.request_timeout = absl::Milliseconds(300);
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const int fd = Connect(server_->port());
  ASSERT_TRUE(WriteAll(fd, "GET /echo HTTP/1.1\r\nHost: loc"));
  const absl::Time start = absl::Now();
  const std::string r = ReadAll(fd);
  close(fd);
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(Body(r), "request not complete in time\n");
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  // A silent one too; a prompt one is served meanwhile.
  const int silent = Connect(server_->port());
  EXPECT_EQ(StatusLine(Get("/echo", "localhost")), "HTTP/1.1 201 Created");
  EXPECT_EQ(StatusLine(ReadAll(silent)), "HTTP/1.1 408 Request Timeout");
  close(silent);
}

TEST_F(HttpServerTest, ASlowHandlerBlocksOnlyItsOwnConnection) {
  absl::Notification release;
  std::map<std::string, HttpHandler> routes = EchoRoutes();
  routes["/slow"] = [&release](const HttpRequest&) {
    release.WaitForNotificationWithTimeout(absl::Seconds(10));
    return HttpResponse{200, "text/plain", "slow"};
  };
  auto server = HttpServer::Start("127.0.0.1:0", std::move(routes), {});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::vector<std::thread> slow;
  for (int i = 0; i < 6; ++i) {
    slow.emplace_back([port] {
      EXPECT_EQ(
          Body(Fetch(port, "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")),
          "slow");
    });
  }
  const absl::Time start = absl::Now();
  EXPECT_EQ(
      StatusLine(Fetch(port, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")),
      "HTTP/1.1 200 OK");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  release.Notify();
  for (std::thread& t : slow) t.join();
}

// Open descriptors of this process.
int OpenFds() {
  int n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(HttpServerStartTest, StoppingClosesEverything) {
  const int before = OpenFds();
  {
    auto server = HttpServer::Start("127.0.0.1:0", EchoRoutes());
    ASSERT_TRUE(server.ok()) << server.status();
    const int silent = Connect((*server)->port());
    EXPECT_EQ(StatusLine(Fetch((*server)->port(),
                               "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")),
              "HTTP/1.1 200 OK");
    const absl::Time start = absl::Now();
    server->reset();  // a silent connection does not hold it up
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
    close(silent);
  }
  EXPECT_EQ(OpenFds(), before);
}

// The idle timeout counts silence on the socket, not a handler's work.
TEST(HttpServerIdleTest, AHandlerSlowerThanTheIdleTimeoutStillAnswers) {
  HttpServer::Options options;
  options.idle_timeout = absl::Seconds(1);
  auto server =
      HttpServer::Start("127.0.0.1:0",
                        {{"/slow",
                          [](const HttpRequest&) {
                            absl::SleepFor(absl::Milliseconds(2500));
                            return HttpResponse{200, "text/plain", "done"};
                          }}},
                        options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string r =
      Fetch((*server)->port(), "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 200 OK");
  EXPECT_EQ(Body(r), "done");
}

TEST(HttpServerStartTest, PortInUseIsUnavailable) {
  auto first = HttpServer::Start("127.0.0.1:0", {});
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string listen = absl::StrCat("127.0.0.1:", (*first)->port());
  auto second = HttpServer::Start(listen, {});
  EXPECT_EQ(second.status(),
            absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", listen,
                                                ": Address already in use")));
}

TEST(HttpServerStartTest, BadListenAddressesAreInvalid) {
  EXPECT_EQ(HttpServer::Start("nonsense", {}).status(),
            absl::InvalidArgumentError(
                "HTTP listen address 'nonsense' is not HOST:PORT"));
  EXPECT_EQ(HttpServer::Start("::1:0", {}).status(),
            absl::InvalidArgumentError(
                "HTTP listen address '::1:0': write IPv6 addresses as [ADDR]"));
}

TEST(HttpServerStartTest, ListensOnIpv6) {
  auto server = HttpServer::Start("[::1]:0", EchoRoutes());
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback: " << server.status();
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_port = htons(static_cast<uint16_t>((*server)->port()));
  addr.sin6_addr = in6addr_loopback;
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  WriteAll(fd, "GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n");
  EXPECT_EQ(StatusLine(ReadAll(fd)), "HTTP/1.1 200 OK");
  close(fd);
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
}  // namespace msgq
