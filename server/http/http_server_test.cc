// HttpServer on libmicrohttpd over plain TCP, with raw sockets as clients:
// exact-path routing, the headers every answer carries, the query, form and
// chunked bodies a handler sees, the limits and what a client over each gets
// (413 body, 431 headers, 400 parameters, 429 connections per address and in
// total, 408 slow request), the Host check against DNS rebinding, and that a
// slow handler holds up only its own connection. Starting and stopping is in
// http_server_lifecycle_test.cc, HTTPS in https_server_test.cc.
#include "server/http/http_server.h"

#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http/http_server_test_util.h"

namespace msgq::http_test {
namespace {

using ::testing::IsSupersetOf;
using ::testing::UnorderedElementsAreArray;

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
  std::vector<std::string> expected = SecurityHeaderLines();
  expected.insert(expected.end(), {"Content-Type: text/html",
                                   "Content-Length: 11", "Connection: close"});
  EXPECT_THAT(HeaderLines(home), UnorderedElementsAreArray(expected));
  EXPECT_EQ(Body(home), "<p>home</p>");
  const std::string nope = Get("/nope", Local());
  EXPECT_EQ(StatusLine(nope), "HTTP/1.1 404 Not Found");
  EXPECT_THAT(HeaderLines(nope), IsSupersetOf(SecurityHeaderLines()));
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
  EXPECT_THAT(HeaderLines(r), IsSupersetOf(SecurityHeaderLines()));
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
  EXPECT_THAT(HeaderLines(evil), IsSupersetOf(SecurityHeaderLines()));
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
  EXPECT_THAT(HeaderLines(r), IsSupersetOf(SecurityHeaderLines()));
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
  EXPECT_THAT(HeaderLines(r), IsSupersetOf(SecurityHeaderLines()));
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

}  // namespace
}  // namespace msgq::http_test
