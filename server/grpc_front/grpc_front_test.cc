#include "server/grpc_front/grpc_front.h"

#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/server_posix.h"
#include "gtest/gtest.h"
#include "server/grpc_front/h2_test_client.h"

namespace msgq::grpc_front {
namespace {

using testing::GrpcRequestHeaderBlock;
using testing::H2Frame;
using testing::H2TestClient;
using testing::RapidResetRound;

// Answers every method OK at once, with no message.
class AnswerAll final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext*) override {
    class Reactor final : public grpc::ServerGenericBidiReactor {
     public:
      Reactor() { Finish(grpc::Status::OK); }
      void OnDone() override { delete this; }
    };
    return new Reactor;
  }
};

// A gRPC server reached through a front.
class GrpcFrontTest : public ::testing::Test {
 protected:
  void StartFront(GrpcFront::Options options) {
    grpc::ServerBuilder builder;
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    options.listen = "127.0.0.1:0";
    auto front = GrpcFront::Start(
        std::move(options),
        [s = server_.get()](int fd) { grpc::AddInsecureChannelFromFd(s, fd); },
        &peers_);
    ASSERT_TRUE(front.ok()) << front.status();
    front_ = *std::move(front);
  }
  void TearDown() override {
    if (front_ != nullptr) front_->StopAccepting();
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::seconds(1));
    }
    front_.reset();
    server_.reset();
  }

  // A call over a new channel from 127.0.0.1.
  grpc::Status Call() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a new connection
    auto channel =
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(front_->port()),
                                  grpc::InsecureChannelCredentials(), args);
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&context, "/test.Any/Call", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    done.WaitForNotification();
    return status;
  }

  AnswerAll service_;
  auth::PeerDirectory peers_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcFront> front_;
};

TEST_F(GrpcFrontTest, CallsPassThrough) {
  StartFront({});
  EXPECT_TRUE(Call().ok());
  EXPECT_TRUE(Call().ok());
  EXPECT_EQ(front_->counters().accepted, 2u);
  EXPECT_EQ(front_->counters().resets, 0u);
}

TEST_F(GrpcFrontTest, ARapidResetFloodIsToldGoAwayAndItsAddressStaysSpent) {
  GrpcFront::Options options;
  options.resets = {.burst = 50, .per_second = 1};
  StartFront(options);
  auto attacker = H2TestClient::Connect(front_->port(), false, "127.0.0.2");
  ASSERT_NE(attacker, nullptr);
  std::string flood =
      std::string(kH2ClientPreface) + H2Frame(kH2Settings, 0, 0, "");
  const std::string block = GrpcRequestHeaderBlock("/test.Any/Call");
  for (uint32_t id = 1; id < 2 * 200; id += 2)
    flood += RapidResetRound(id, block);
  attacker->Send(flood);  // may fail part way: the front closes it
  EXPECT_TRUE(attacker->ReadUntilClosed(absl::Seconds(10)));
  EXPECT_EQ(attacker->goaway_error(), kH2EnhanceYourCalm);
  GrpcFront::Counters c = front_->counters();
  EXPECT_EQ(c.closed_resets, 1u);
  EXPECT_GE(c.resets, 51u);

  // The address may come back, but its budget is still spent: the first
  // reset of an unanswered stream ends the new connection too...
  auto again = H2TestClient::Connect(front_->port(), false, "127.0.0.2");
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(again->Send(std::string(kH2ClientPreface) +
                          H2Frame(kH2Settings, 0, 0, "") +
                          RapidResetRound(1, block)));
  EXPECT_TRUE(again->ReadUntilClosed(absl::Seconds(5)));
  EXPECT_EQ(again->goaway_error(), kH2EnhanceYourCalm);
  // ...while another address is served.
  EXPECT_TRUE(Call().ok());
  c = front_->counters();
  EXPECT_EQ(c.closed_resets, 2u);
}

TEST_F(GrpcFrontTest, ResetsWithinTheBudgetAreServed) {
  GrpcFront::Options options;
  options.resets = {.burst = 50, .per_second = 1};
  StartFront(options);
  auto client = H2TestClient::Connect(front_->port(), false, "127.0.0.3");
  ASSERT_NE(client, nullptr);
  std::string bytes =
      std::string(kH2ClientPreface) + H2Frame(kH2Settings, 0, 0, "");
  const std::string block = GrpcRequestHeaderBlock("/test.Any/Call");
  for (uint32_t id = 1; id < 2 * 40; id += 2)
    bytes += RapidResetRound(id, block);
  ASSERT_TRUE(client->Send(bytes));
  EXPECT_FALSE(client->ReadUntilClosed(absl::Seconds(1)));
  // Counted unless gRPC answered the stream before its reset came by.
  EXPECT_LE(front_->counters().resets, 40u);
  EXPECT_EQ(front_->counters().closed_resets, 0u);
}

TEST_F(GrpcFrontTest, ConnectionsOverTheMaximumAreClosedAtAccept) {
  GrpcFront::Options options;
  options.max_connections = 2;
  StartFront(options);
  auto a = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  auto b = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->Send(kH2ClientPreface));
  ASSERT_TRUE(b->Send(kH2ClientPreface));
  auto c = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->ReadUntilClosed(absl::Seconds(5)));
  EXPECT_FALSE(a->ReadUntilClosed(absl::Milliseconds(200)));
  EXPECT_EQ(front_->counters().refused_full, 1u);
  EXPECT_EQ(front_->counters().open, 2);
}

TEST_F(GrpcFrontTest, AClientSilentPastTheHandshakeTimeoutIsClosed) {
  GrpcFront::Options options;
  options.handshake_timeout = absl::Milliseconds(500);
  StartFront(options);
  auto silent = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  auto half = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  auto whole = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  ASSERT_NE(silent, nullptr);
  ASSERT_NE(half, nullptr);
  ASSERT_NE(whole, nullptr);
  ASSERT_TRUE(half->Send(kH2ClientPreface.substr(0, 10)));
  ASSERT_TRUE(whole->Send(kH2ClientPreface));
  EXPECT_TRUE(silent->ReadUntilClosed(absl::Seconds(5)));
  EXPECT_TRUE(half->ReadUntilClosed(absl::Seconds(5)));
  EXPECT_FALSE(whole->ReadUntilClosed(absl::Seconds(1)));
  EXPECT_EQ(front_->counters().failed_handshakes, 2u);
}

TEST_F(GrpcFrontTest, AClientNotSpeakingHttp2IsClosed) {
  StartFront({});
  auto client = H2TestClient::Connect(front_->port(), false, "127.0.0.1");
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(client->ReadUntilClosed(absl::Seconds(5)));
  EXPECT_EQ(front_->counters().not_http2, 1u);
}

}  // namespace
}  // namespace msgq::grpc_front
