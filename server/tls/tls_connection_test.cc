#include "server/tls/tls_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/tls/tls_test_util.h"

namespace msgq::tls {
namespace {

using testing::TestClient;

class TlsConnectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(testing::MakeTempDir());
    ASSERT_TRUE(testing::MakeCertificates(*certs_)) << *certs_;
  }
  static void TearDownTestSuite() {
    testing::RemoveTempDir(*certs_);
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
  }
  std::unique_ptr<TlsServerContext> Context(const std::string& client_ca) {
    auto ctx = TlsServerContext::Create(
        {*certs_ + "/server1.pem", *certs_ + "/server1.key",
         client_ca.empty() ? "" : *certs_ + "/" + client_ca + ".pem"});
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    return ctx.ok() ? *std::move(ctx) : nullptr;
  }
  absl::StatusOr<std::unique_ptr<TlsConnection>> Accept(
      TlsServerContext& ctx, absl::Duration timeout = absl::Seconds(10)) {
    return TlsConnection::Accept(fds_[0], ctx.Acquire(), absl::Now() + timeout);
  }

  static std::string* certs_;
  int fds_[2];
};
std::string* TlsConnectionTest::certs_ = nullptr;

TEST_F(TlsConnectionTest, HandshakeThenBytesBothWaysThenClose) {
  auto ctx = Context("");
  TestClient client(fds_[1], *certs_, "ca");
  std::string got, server_cn;
  std::thread peer([&] {
    ASSERT_TRUE(client.Connect());
    server_cn = client.ServerCommonName();
    ASSERT_TRUE(client.Write("ping"));
    got = client.Read();
    client.Shutdown();
  });
  auto conn = Accept(*ctx);
  ASSERT_TRUE(conn.ok()) << conn.status();
  EXPECT_EQ((*conn)->Version(), "TLSv1.3");
  EXPECT_TRUE((*conn)->PeerIdentities().empty());
  char buf[16];
  absl::StatusOr<size_t> n =
      (*conn)->Read(buf, sizeof(buf), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(std::string(buf, *n), "ping");
  EXPECT_EQ((*conn)->WriteAll("pong", absl::Now() + absl::Seconds(10)),
            absl::OkStatus());
  n = (*conn)->Read(buf, sizeof(buf), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 0u);
  peer.join();
  EXPECT_EQ(got, "pong");
  EXPECT_EQ(server_cn, "msgqd-1");
}

TEST_F(TlsConnectionTest, ReadWaitsUntilTheDeadlineAndReportsBufferedBytes) {
  auto ctx = Context("");
  TestClient client(fds_[1], *certs_, "ca");
  absl::Notification wrote;
  std::thread peer([&] {
    ASSERT_TRUE(client.Connect());
    wrote.WaitForNotification();
    client.Write("abcdef");
    client.Read();  // until the server closes
  });
  auto conn = Accept(*ctx);
  ASSERT_TRUE(conn.ok()) << conn.status();
  char buf[2];
  EXPECT_EQ((*conn)->Read(buf, sizeof(buf), absl::InfinitePast()).status(),
            absl::DeadlineExceededError("no TLS data in time"));
  EXPECT_FALSE((*conn)->HasBufferedData());
  wrote.Notify();
  absl::StatusOr<size_t> n =
      (*conn)->Read(buf, sizeof(buf), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(std::string(buf, *n), "ab");
  // The rest of the record is decrypted and buffered: fd() may not be
  // readable, but a Read returns at once.
  EXPECT_TRUE((*conn)->HasBufferedData());
  n = (*conn)->Read(buf, sizeof(buf), absl::InfinitePast());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(std::string(buf, *n), "cd");
  (*conn)->Shutdown(absl::Now() + absl::Seconds(10));
  peer.join();
}

TEST_F(TlsConnectionTest, AClientTrustingAnotherCaFailsTheHandshake) {
  auto ctx = Context("");
  TestClient client(fds_[1], *certs_, "other");
  bool connected = true;
  std::thread peer([&] { connected = client.Connect(); });
  auto conn = Accept(*ctx);
  peer.join();
  EXPECT_FALSE(connected);
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(conn.status().message(),
            "TLS handshake failed: tlsv1 alert unknown ca");
}

TEST_F(TlsConnectionTest, MutualTlsNeedsACertificateOfTheClientCa) {
  auto ctx = Context("ca");
  {
    TestClient client(fds_[1], *certs_, "ca");  // no certificate
    std::thread peer([&] {
      client.Connect();
      client.Read();  // TLS 1.3: the server's alert comes now
    });
    auto conn = Accept(*ctx);
    peer.join();
    EXPECT_EQ(conn.status(),
              absl::UnavailableError("TLS handshake failed: peer did not "
                                     "return a certificate"));
  }
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
  {
    TestClient client(fds_[1], *certs_, "ca", "intruder");
    std::thread peer([&] {
      client.Connect();
      client.Read();
    });
    auto conn = Accept(*ctx);
    peer.join();
    EXPECT_EQ(conn.status(),
              absl::UnavailableError(
                  "TLS handshake failed: certificate verify failed: unable "
                  "to get local issuer certificate"));
  }
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
  {
    TestClient client(fds_[1], *certs_, "ca", "reader");
    std::thread peer([&] {
      ASSERT_TRUE(client.Connect());
      client.Write("hi");
    });
    auto conn = Accept(*ctx);
    peer.join();
    ASSERT_TRUE(conn.ok()) << conn.status();
    EXPECT_EQ((*conn)->PeerIdentities(), std::vector<std::string>{"reader"});
  }
}

// Signs client certificate `name` with the test CA: subject `subject`,
// subjectAltName `san` unless empty.
bool SignClient(const std::string& dir, const std::string& name,
                const std::string& subject, const std::string& san) {
  std::ofstream(dir + "/" + name + ".ext")
      << (san.empty() ? "" : "subjectAltName=" + san + "\n");
  const std::string cmd = absl::StrCat(
      "cd ", dir, " && openssl req -newkey ec -pkeyopt ",
      "ec_paramgen_curve:prime256v1 -nodes -keyout ", name, ".key -out ", name,
      ".csr -subj ", subject, " && openssl x509 -req -in ", name,
      ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -out ", name,
      ".pem -days 2 -extfile ", name, ".ext");
  return system(absl::StrCat("(", cmd, ") >>", dir, "/openssl.log 2>&1")
                    .c_str()) == 0;
}

// gRPC's rule (grpc_auth.h): the subjectAltNames in order when there are
// any, whatever the common name says; else the common name; else nothing.
TEST_F(TlsConnectionTest, PeerIdentitiesAreTheSubjectAltNamesElseTheCn) {
  ASSERT_TRUE(SignClient(
      *certs_, "sans", "/CN=cn-name",
      "DNS:san-first,email:ops@example.com,IP:10.1.2.3,IP:::1,"
      "URI:spiffe://msgq/worker,otherName:1.3.6.1.4.1.311.20.2.3;UTF8:x,"
      "DNS:last"));
  ASSERT_TRUE(SignClient(*certs_, "nameless", "/O=acme", ""));
  auto ctx = Context("ca");
  struct Case {
    std::string client;
    std::vector<std::string> identities;
  };
  for (const Case& c :
       {Case{"sans",
             {"san-first", "ops@example.com", "10.1.2.3", "::1",
              "spiffe://msgq/worker", "other types of SAN", "last"}},
        Case{"reader", {"reader"}}, Case{"nameless", {}}}) {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    TestClient client(fds[1], *certs_, "ca", c.client);
    std::thread peer([&] {
      ASSERT_TRUE(client.Connect());
      client.Write("hi");
    });
    auto conn = TlsConnection::Accept(fds[0], ctx->Acquire(),
                                      absl::Now() + absl::Seconds(10));
    peer.join();
    ASSERT_TRUE(conn.ok()) << c.client << ": " << conn.status();
    EXPECT_EQ((*conn)->PeerIdentities(), c.identities) << c.client;
  }
  close(fds_[0]);
  close(fds_[1]);
}

TEST_F(TlsConnectionTest, AHandshakeNotFinishedInTimeIsDropped) {
  auto ctx = Context("");
  const absl::Time start = absl::Now();
  auto conn = Accept(*ctx, absl::Milliseconds(200));  // the client is silent
  EXPECT_EQ(conn.status(),
            absl::DeadlineExceededError("TLS handshake not finished in time"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(190));
  close(fds_[1]);
}

TEST_F(TlsConnectionTest, PlainHttpIsRefused) {
  auto ctx = Context("");
  ASSERT_EQ(write(fds_[1], "GET / HTTP/1.1\r\n\r\n", 18), 18);
  auto conn = Accept(*ctx);
  EXPECT_EQ(conn.status(),
            absl::UnavailableError("TLS handshake failed: http request"));
  close(fds_[1]);
}

TEST_F(TlsConnectionTest, Tls11IsRefused) {
  auto ctx = Context("");
  TestClient client(fds_[1], *certs_, "ca", "", TLS1_1_VERSION);
  bool connected = true;
  std::thread peer([&] { connected = client.Connect(); });
  auto conn = Accept(*ctx);
  peer.join();
  EXPECT_FALSE(connected);
  EXPECT_EQ(conn.status(), absl::UnavailableError(
                               "TLS handshake failed: unsupported protocol"));
}

}  // namespace
}  // namespace msgq::tls
