// msgqd's limits against hostile or broken clients (issue 17): the largest
// request, concurrent calls per connection, and the ping enforcement flag
// checks, against a real msgqd and MariaDB.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::HasSubstr;

class SecurityLimitsTest : public SecurityTest {};

TEST_F(SecurityLimitsTest, OversizedRequestIsResourceExhausted) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--grpc_max_receive_message_bytes=2048", "--http_listen="}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "a", ""));
  v1::MessageAckRequest request;
  request.set_keyspace("msgq");
  request.set_name("a");
  for (int i = 0; i < 500; ++i) request.add_ids(std::to_string(1000000 + i));
  ASSERT_GT(request.ByteSizeLong(), 2048u);
  grpc::ClientContext ctx;
  Prepare(&ctx, "");
  v1::MessageAckResponse response;
  grpc::Status big = stub_->MessageAck(&ctx, request, &response);
  EXPECT_EQ(big.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A request within the limit is served.
  request.mutable_ids()->DeleteSubrange(10, request.ids_size() - 10);
  grpc::ClientContext ok_ctx;
  Prepare(&ok_ctx, "");
  EXPECT_TRUE(stub_->MessageAck(&ok_ctx, request, &response).ok());
}

TEST_F(SecurityLimitsTest, ConcurrentStreamsPerConnectionAreCapped) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--grpc_max_concurrent_streams=2", "--http_listen="}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "a", ""));
  auto channel = PlainChannel(server_->address());
  auto stub = v1::Messaging::NewStub(channel);
  // Two open streams take the connection's two slots ...
  StreamCollector one(stub.get(), "a", "msgq");
  StreamCollector two(stub.get(), "a", "msgq");
  ASSERT_TRUE(one.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(two.WaitForFields(absl::Seconds(10)));
  // ... so a third call on that connection waits for one (here, past its
  // deadline), while another connection is served.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(1500));
  v1::ListTablesResponse r;
  EXPECT_EQ(stub->ListTables(&ctx, v1::ListTablesRequest(), &r).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(ListTables(stub_.get(), "", &r).ok());
  one.Cancel();
  ASSERT_TRUE(one.WaitForEnd(absl::Seconds(10)));
  EXPECT_TRUE(Eventually([&] { return ListTables(stub.get(), "", &r).ok(); },
                         absl::Seconds(10)));
}

// A client pinging far more often than --grpc_min_ping_interval while its
// stream carries no data gets GOAWAY (too many pings): the stream ends
// UNAVAILABLE instead of the server answering pings forever.
TEST_F(SecurityLimitsTest, PingFloodEndsTheConnection) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--grpc_min_ping_interval=10s", "--http_listen="}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "a", ""));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 100);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  auto stub = v1::Messaging::NewStub(grpc::CreateCustomChannel(
      server_->address(), grpc::InsecureChannelCredentials(), args));
  StreamCollector idle(stub.get(), "a", "msgq");
  ASSERT_TRUE(idle.WaitForFields(absl::Seconds(10)));
  ASSERT_TRUE(idle.WaitForEnd(absl::Seconds(20)));
  EXPECT_EQ(idle.status().error_code(), grpc::StatusCode::UNAVAILABLE)
      << idle.status().error_message();
}

// A TLS client that connects and never starts its handshake is closed
// after --grpc_handshake_timeout (gRPC's own default is 120 s), so silent
// connections hold the port for a bounded time.
TEST_F(SecurityLimitsTest, SilentConnectionIsClosedAfterTheHandshakeTimeout) {
  ASSERT_TRUE(MakeTestCertificates(files_->path()))
      << ReadText(Path("openssl.log"));
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(StartServer(
      {"--tls_cert=" + Path("server1.pem"), "--tls_key=" + Path("server1.key"),
       "--grpc_handshake_timeout=1s", "--http_listen="}));
  const std::string address = server_->address();
  const int port = std::atoi(address.substr(address.rfind(':') + 1).c_str());
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  const absl::Time start = absl::Now();
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1) << "still open after 10 s";
  char byte;
  EXPECT_EQ(read(fd, &byte, 1), 0);  // closed, nothing sent
  const absl::Duration open_for = absl::Now() - start;
  EXPECT_GE(open_for, absl::Milliseconds(900));
  EXPECT_LT(open_for, absl::Seconds(5));
  close(fd);
  // A client that does its handshake is served.
  auto stub = v1::Messaging::NewStub(TlsChannel(address, files_->path()));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub.get(), "a", ""));
}

// A connection without calls gets GOAWAY after --grpc_max_connection_idle
// (the client's channel goes idle), and reconnects at its next call.
TEST_F(SecurityLimitsTest, IdleConnectionIsClosedAndReconnects) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--grpc_max_connection_idle=1s", "--http_listen="}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "a", ""));
  auto channel = PlainChannel(server_->address());
  auto stub = v1::Messaging::NewStub(channel);
  v1::ListTablesResponse r;
  ASSERT_TRUE(ListTables(stub.get(), "", &r).ok());
  ASSERT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_TRUE(
      Eventually([&] { return channel->GetState(false) == GRPC_CHANNEL_IDLE; },
                 absl::Seconds(10)));
  EXPECT_TRUE(ListTables(stub.get(), "", &r).ok());
  // An open stream keeps its connection busy past the idle deadline: a
  // connection of its own opened after the stream, with one call, goes
  // idle twice meanwhile (each time a whole --grpc_max_connection_idle
  // without a call), and the stream's is still open.
  StreamCollector stream(stub.get(), "a", "msgq");
  ASSERT_TRUE(stream.WaitForFields(absl::Seconds(10)));
  auto idle_channel = PlainChannel(server_->address());
  auto idle_stub = v1::Messaging::NewStub(idle_channel);
  for (int closed = 0; closed < 2; ++closed) {
    ASSERT_TRUE(ListTables(idle_stub.get(), "", &r).ok());
    ASSERT_TRUE(Eventually(
        [&] { return idle_channel->GetState(false) == GRPC_CHANNEL_IDLE; },
        absl::Seconds(10)));
  }
  EXPECT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_FALSE(stream.WaitForEnd(absl::ZeroDuration()));
  stream.Cancel();
}

TEST_F(SecurityLimitsTest, BadLimitFlagsRefuseToStart) {
  absl::StatusOr<std::unique_ptr<Msgqd>> s = Msgqd::Start(
      *db_, {"--databases=msgq", "--grpc_max_concurrent_streams=0"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              HasSubstr("--grpc_max_concurrent_streams >= 1"));
  s = Msgqd::Start(*db_,
                   {"--databases=msgq", "--max_streams_per_principal=-1"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              HasSubstr("--max_streams_per_principal must be >= 0"));
}

}  // namespace
}  // namespace msgq::testing
