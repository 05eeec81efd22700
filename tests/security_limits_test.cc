// msgqd's limits against hostile or broken clients
// (docs/security.md#limits-against-hostile-clients): the largest request,
// concurrent calls per connection, and the ping enforcement flag checks,
// against a real msgqd and MariaDB.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/security_fixture.h"

namespace msgq::testing {
namespace {

using ::testing::HasSubstr;

class SecurityLimitsTest : public SecurityTest {};

// The threads of process `pid` (entries of /proc/PID/task), or those
// whose name starts with `name`.
int ThreadCount(pid_t pid, const std::string& name = "") {
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return -1;
  int threads = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::string comm;
    if (!name.empty()) {
      std::ifstream(absl::StrCat(tasks, "/", e->d_name, "/comm")) >> comm;
    }
    threads += comm.rfind(name, 0) == 0;
  }
  closedir(dir);
  return threads;
}

constexpr char kReflectionMethod[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

// Reflection streams (ServerReflectionInfo) opened without a token and
// without a message: msgqd's synchronous reflection service then holds a
// thread per stream, blocked reading it. Driven on one completion queue.
class ReflectionStreams {
 public:
  ReflectionStreams() = default;
  ~ReflectionStreams() {
    for (auto& call : calls_) {
      if (!call->ended) call->ctx.TryCancel();
    }
    Pump([&] { return ended_ == static_cast<int>(calls_.size()); },
         absl::Seconds(30));
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  // Opens `per_connection` streams on each of `connections` connections
  // of their own; for each it then reads the first answer, which the
  // server sends only when it ends the stream.
  void Open(const std::string& address, int connections, int per_connection) {
    for (int c = 0; c < connections; ++c) {
      stubs_.push_back(
          std::make_unique<grpc::GenericStub>(PlainChannel(address)));
      for (int i = 0; i < per_connection; ++i) {
        auto call = std::make_unique<Call>();
        call->ctx.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::minutes(2));
        call->rw =
            stubs_.back()->PrepareCall(&call->ctx, kReflectionMethod, &cq_);
        call->rw->StartCall(Tag(calls_.size(), kStarted));
        calls_.push_back(std::move(call));
      }
    }
  }

  // Drives the calls until `done` or `timeout`; whether `done`.
  template <typename Done>
  bool Pump(Done done, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!done()) {
      if (absl::Now() > deadline) return false;
      void* tag;
      bool ok;
      const auto next = cq_.AsyncNext(
          &tag, &ok,
          std::chrono::system_clock::now() + std::chrono::milliseconds(100));
      if (next == grpc::CompletionQueue::SHUTDOWN) return done();
      if (next != grpc::CompletionQueue::GOT_EVENT) continue;
      const auto index = reinterpret_cast<uintptr_t>(tag) >> 2;
      const auto op = reinterpret_cast<uintptr_t>(tag) & 3;
      Call& call = *calls_[index];
      if (op == kStarted && ok) {
        call.rw->Read(&call.answer, Tag(index, kRead));
      } else if (op == kStarted || op == kRead) {
        // Not started, or the server ended the stream.
        call.rw->Finish(&call.status, Tag(index, kFinished));
      } else if (op == kFinished) {
        call.ended = true;
        ++ended_;
        if (call.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          ++exhausted_;
          exhausted_message_ = call.status.error_message();
        }
      }
    }
    return true;
  }

  int ended() const { return ended_; }
  int exhausted() const { return exhausted_; }
  const std::string& exhausted_message() const { return exhausted_message_; }

 private:
  static constexpr uintptr_t kStarted = 0, kRead = 1, kFinished = 2;
  struct Call {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> rw;
    grpc::ByteBuffer answer;
    grpc::Status status;
    bool ended = false;
  };
  static void* Tag(size_t index, uintptr_t op) {
    return reinterpret_cast<void*>((index << 2) | op);
  }

  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs_;
  std::vector<std::unique_ptr<Call>> calls_;
  int ended_ = 0;
  int exhausted_ = 0;
  std::string exhausted_message_;
};

// 1,000 unauthenticated reflection streams (10 connections x 100) hold
// --grpc_max_sync_threads threads (one of them polling), not a thread
// each; the other 993 get RESOURCE_EXHAUSTED at once. msgqd's own
// (callback) services are served meanwhile, and reflection is again once
// the streams end.
TEST_F(SecurityLimitsTest, ReflectionStreamsHoldAtMostTheSyncThreads) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("a"));
  ASSERT_NO_FATAL_FAILURE(StartServer({"--http_listen="}));
  ASSERT_NO_FATAL_FAILURE(WaitForTable(stub_.get(), "a", ""));
  const pid_t pid = server_->pid();
  const int before = ThreadCount(pid);
  ASSERT_GT(before, 0);
  {
    ReflectionStreams streams;
    streams.Open(server_->address(), 10, 100);
    const bool settled = streams.Pump(
        [&] { return streams.exhausted() >= 993; }, absl::Seconds(60));
    const int during = ThreadCount(pid);
    // gRPC names them "grpcpp_sync_server" (15 characters kept).
    const int sync_threads = ThreadCount(pid, "grpcpp_sync_ser");
    RecordProperty("threads_before", before);
    RecordProperty("threads_during", during);
    RecordProperty("sync_threads_during", sync_threads);
    EXPECT_TRUE(settled) << streams.exhausted() << " refused; msgqd threads "
                         << before << " -> " << during;
    // The default --grpc_max_sync_threads=8: seven streams each hold a
    // thread and one thread polls (it was there before). gRPC may start a
    // thread of its own for the burst of calls (seen: one, with or without
    // the cap).
    EXPECT_EQ(streams.exhausted(), 993);
    EXPECT_EQ(streams.ended(), 993);
    EXPECT_EQ(streams.exhausted_message(), "Server Threadpool Exhausted");
    EXPECT_EQ(sync_threads, 8);
    EXPECT_LE(during, before + 8)
        << "msgqd threads " << before << " -> " << during;
    // Callback services do not need those threads.
    v1::ListTablesResponse r;
    EXPECT_TRUE(ListTables(stub_.get(), "", &r).ok());
    StreamCollector stream(stub_.get(), "a", "msgq");
    EXPECT_TRUE(stream.WaitForFields(absl::Seconds(10)));
  }
  // The held streams were cancelled: their threads are free again.
  ReflectionStreams again;
  again.Open(server_->address(), 1, 1);
  EXPECT_FALSE(again.Pump([&] { return again.ended() == 1; }, absl::Seconds(2)))
      << "a reflection stream was refused after the others ended";
}

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
  s = Msgqd::Start(*db_, {"--databases=msgq", "--grpc_max_sync_threads=1"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("--grpc_max_sync_threads >= 2"));
  s = Msgqd::Start(*db_, {"--databases=msgq", "--grpc_max_stream_resets=0"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("--grpc_max_stream_resets >= 1"));
}

}  // namespace
}  // namespace msgq::testing
