// HttpServer over HTTPS (Options::tls): the TlsTerminator in front of
// civetweb, with OpenSSL clients over TCP.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/http/http_server.h"
#include "server/tls/tls_test_util.h"

namespace msgq {
namespace {

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

// Everything until the server closes.
std::string ReadAll(TestClient& client) {
  std::string out;
  for (std::string s = client.Read(); !s.empty(); s = client.Read()) out += s;
  return out;
}

// What a plain socket reads until EOF (or an error).
std::string ReadAllPlain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return out;
}

class TlsTerminatorTest : public ::testing::Test {
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
  void Start(HttpServer::Options options = {}) {
    auto ctx = tls::TlsServerContext::Create(
        {*certs_ + "/server1.pem", *certs_ + "/server1.key", ""});
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    context_ = *std::move(ctx);
    options.tls = context_.get();
    auto server = HttpServer::Start(
        "127.0.0.1:0",
        {{"/hello",
          [this](const HttpRequest& r) {
            absl::MutexLock lock(&mu_);
            headers_ = r.headers;
            return HttpResponse{200, "text/plain", "hi " + r.body};
          }}},
        options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  static constexpr char kPost[] =
      "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";

  static std::string* certs_;
  // Declared first, destroyed last: the handler writes them on civetweb's
  // workers until server_ has stopped (TSan saw headers_ destroyed while a
  // worker assigned it when they came after server_).
  absl::Mutex mu_;
  std::map<std::string, std::string> headers_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<tls::TlsServerContext> context_;
  std::unique_ptr<HttpServer> server_;
};
std::string* TlsTerminatorTest::certs_ = nullptr;

TEST_F(TlsTerminatorTest, ServesRequestsOverTlsWithoutShowingTheRelayHeader) {
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_TRUE(server_->tls());
  EXPECT_NE(server_->port(), server_->backend_port());
  TestClient client(Connect(server_->port()), *certs_, "ca");
  ASSERT_TRUE(client.Connect());
  ASSERT_TRUE(client.Write(kPost));
  const std::string response = ReadAll(client);
  EXPECT_EQ(response.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_EQ(response.substr(response.size() - 6), "hi abc");
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(headers_.count(kTlsRelayHeader), 0u);
  EXPECT_EQ(headers_["content-length"], "3");
}

TEST_F(TlsTerminatorTest, TheBackendPortAnswersOnlyTheTerminator) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const std::string header :
       {"", "X-Msgq-Tls-Relay: 00000000000000000000000000000000\r\n"}) {
    const int fd = Connect(server_->backend_port());
    const std::string request =
        absl::StrCat("GET /hello HTTP/1.1\r\n", header, "Host: x\r\n\r\n");
    ASSERT_EQ(write(fd, request.data(), request.size()),
              static_cast<ssize_t>(request.size()));
    const std::string response = ReadAllPlain(fd);
    close(fd);
    EXPECT_EQ(response.substr(0, 34), "HTTP/1.1 421 Misdirected Request\r\n")
        << response;
  }
}

TEST_F(TlsTerminatorTest, PlainHttpGetsNoAnswer) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const int fd = Connect(server_->port());
  ASSERT_EQ(write(fd, "GET /hello HTTP/1.1\r\n\r\n", 23), 23);
  EXPECT_EQ(ReadAllPlain(fd), "");
  close(fd);
}

TEST_F(TlsTerminatorTest, ASilentClientIsDroppedAfterTheHandshakeTimeout) {
  HttpServer::Options options;
  options.terminator.handshake_timeout = absl::Milliseconds(300);
  ASSERT_NO_FATAL_FAILURE(Start(options));
  const int fd = Connect(server_->port());
  const absl::Time start = absl::Now();
  EXPECT_EQ(ReadAllPlain(fd), "");  // EOF: the terminator closed it
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  close(fd);
}

TEST_F(TlsTerminatorTest, StoppingDoesNotWaitForHandshakes) {
  ASSERT_NO_FATAL_FAILURE(Start());  // handshake timeout 10s
  const int fd = Connect(server_->port());
  ASSERT_EQ(write(fd, "\x16\x03\x01\x02\x00\x01", 6), 6);  // half a hello
  std::string response;
  // A full exchange on another connection: the terminator is serving.
  TestClient client(Connect(server_->port()), *certs_, "ca");
  ASSERT_TRUE(client.Connect());
  ASSERT_TRUE(client.Write(kPost));
  EXPECT_EQ(ReadAll(client).substr(0, 15), "HTTP/1.1 200 OK");
  const absl::Time start = absl::Now();
  server_.reset();
  // civetweb's own stop takes about 2s.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  close(fd);
}

TEST_F(TlsTerminatorTest, ConnectionsBeyondTheLimitAreClosedAtOnce) {
  HttpServer::Options options;
  options.terminator.max_connections = 1;
  ASSERT_NO_FATAL_FAILURE(Start(options));
  // Two silent clients: whichever the terminator accepts second is closed
  // at once, the first keeps its slot (until the handshake timeout, 10s).
  int fds[2] = {Connect(server_->port()), Connect(server_->port())};
  pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
  ASSERT_EQ(poll(p, 2, 5000), 1);
  const int refused = p[0].revents != 0 ? 0 : 1;
  EXPECT_EQ(ReadAllPlain(fds[refused]), "");
  close(fds[0]);
  close(fds[1]);  // frees the slot
  std::string response;
  for (int i = 0; i < 50 && response.empty(); ++i) {
    TestClient client(Connect(server_->port()), *certs_, "ca");
    if (client.Connect() && client.Write(kPost)) response = ReadAll(client);
    if (response.empty()) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(response.substr(0, 15), "HTTP/1.1 200 OK");
}

TEST_F(TlsTerminatorTest, PortInUseIsUnavailable) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpServer::Options options;
  options.tls = context_.get();
  const std::string listen = absl::StrCat("127.0.0.1:", server_->port());
  auto second = HttpServer::Start(listen, {}, options);
  EXPECT_EQ(second.status(),
            absl::UnavailableError(absl::StrCat(
                "cannot serve HTTPS on ", listen, ": Address already in use")));
}

}  // namespace
}  // namespace msgq
