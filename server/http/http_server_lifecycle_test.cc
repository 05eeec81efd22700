// HttpServer's life outside a request: Start refuses a port in use
// (UNAVAILABLE) and a malformed listen address (INVALID_ARGUMENT), listens on
// IPv6, and stopping it closes every descriptor without waiting for a silent
// client; the idle timeout counts silence on the socket, not a handler's
// work. Requests and limits are in http_server_test.cc.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/http/http_server.h"
#include "server/http/http_server_test_util.h"

namespace msgq::http_test {
namespace {

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
                "HTTP listen address 'nonsense': want HOST:PORT"));
  EXPECT_EQ(HttpServer::Start("::1:0", {}).status(),
            absl::InvalidArgumentError("HTTP listen address '::1:0': put an "
                                       "IPv6 address in brackets"));
  EXPECT_EQ(HttpServer::Start("localhost:http", {}).status(),
            absl::InvalidArgumentError("HTTP listen address 'localhost:http': "
                                       "the port is not a number in 0..65535"));
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

}  // namespace
}  // namespace msgq::http_test
