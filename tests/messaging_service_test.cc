// MessagingService and StreamReactor in-process: the gRPC service over a
// real Engine (private MariaDB, binlog off, polling), served on a loopback
// port of this process, with everything allowed (no auth files). Each RPC's
// argument validation gives its exact status code and message.
#include "server/messaging_service.h"

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "engine/queue/redelivery_backoff.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/authorizer.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;

class MessagingServiceTest : public MsgqTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MsgqTest::SetUp());
    ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_poller_interval=0.2"));
    Engine::Options options;
    options.mysql = db_->mysql_options();
    options.databases = {"msgq"};
    options.reload_interval = absl::Hours(1);
    options.binlog = false;
    options.manager.max_ids_per_ack = 3;
    options.manager.max_extend = absl::Seconds(60);
    engine_ = std::make_unique<Engine>(options, RealClock::Get(), &jitter_);
    ASSERT_TRUE(engine_->Start().ok());
    auto authorizer = auth::Authorizer::Create({});
    ASSERT_TRUE(authorizer.ok()) << authorizer.status();
    authorizer_ = *std::move(authorizer);
    service_ = std::make_unique<MessagingService>(engine_.get(),
                                                  authorizer_.get(), nullptr);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = v1::Messaging::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (engine_ != nullptr) engine_->Stop(absl::Seconds(10));
  }

  static v1::Delivery Delivery(const std::string& id, int64_t epoch) {
    v1::Delivery d;
    d.set_id(id);
    d.set_epoch(epoch);
    return d;
  }
  grpc::Status Ack(const std::string& name, std::vector<std::string> ids,
                   int64_t* acked = nullptr) {
    grpc::ClientContext context;
    v1::MessageAckRequest request;
    request.set_name(name);
    for (const std::string& id : ids) request.add_ids(id);
    v1::MessageAckResponse response;
    grpc::Status s = stub_->MessageAck(&context, request, &response);
    if (acked != nullptr) *acked = response.acked();
    return s;
  }
  grpc::Status Extend(double seconds, int64_t* extended = nullptr) {
    grpc::ClientContext context;
    v1::MessageExtendRequest request;
    request.set_name("q");
    *request.add_deliveries() = Delivery("1", 1);
    request.set_duration(seconds);
    v1::MessageExtendResponse response;
    grpc::Status s = stub_->MessageExtend(&context, request, &response);
    if (extended != nullptr) *extended = response.extended();
    return s;
  }
  // Opens a stream and returns how it ended (after reading any rows).
  grpc::Status StreamStatus(v1::MessageStreamRequest request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    auto reader = stub_->MessageStream(&context, request);
    v1::MessageStreamResponse response;
    while (reader->Read(&response)) {
    }
    return reader->Finish();
  }

  SeededJitter jitter_{3};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<auth::Authorizer> authorizer_;
  std::unique_ptr<MessagingService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Messaging::Stub> stub_;
};

TEST_F(MessagingServiceTest, StreamRejectsBadArguments) {
  v1::MessageStreamRequest request;
  grpc::Status s = StreamStatus(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "table name is empty");

  request.set_name("q");
  request.set_max_unacked(-1);
  s = StreamStatus(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "max_unacked must be >= 0, got -1");

  request.set_max_unacked(0);
  request.set_name("nope");
  s = StreamStatus(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "message table `nope` not found in keyspaces msgq");

  request.set_name("q");
  request.set_keyspace("other");
  s = StreamStatus(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "keyspace \"other\" is not served");
}

// A stream sends the fields first, then rows; a cancelled stream ends
// CANCELLED on the client.
TEST_F(MessagingServiceTest, StreamSendsFieldsThenRows) {
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  grpc::ClientContext context;
  v1::MessageStreamRequest request;
  request.set_name("q");
  auto reader = stub_->MessageStream(&context, request);
  v1::MessageStreamResponse response;
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_GE(response.fields_size(), 1);
  EXPECT_EQ(response.fields(0).name(), "id");
  EXPECT_EQ(response.rows_size(), 0);
  std::vector<std::string> ids;
  while (ids.size() < 2 && reader->Read(&response)) {
    EXPECT_EQ(response.fields_size(), 0);
    for (const v1::Row& row : response.rows()) ids.push_back(RowValue(row, 0));
  }
  EXPECT_THAT(ids, ElementsAre("1", "2"));
  context.TryCancel();
  while (reader->Read(&response)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// max_unacked = 1: the second row comes only once the first is acked; a
// reload that replaces the table ends the stream UNAVAILABLE.
TEST_F(MessagingServiceTest, StreamHonoursMaxUnackedAndEndsOnReload) {
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 2));
  grpc::ClientContext context;
  v1::MessageStreamRequest request;
  request.set_name("q");
  request.set_max_unacked(1);
  auto reader = stub_->MessageStream(&context, request);
  v1::MessageStreamResponse response;
  ASSERT_TRUE(reader->Read(&response));  // fields
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_EQ(response.rows_size(), 1);
  EXPECT_EQ(RowValue(response.rows(0), 0), "1");
  // Polled and cached, but held back for the stream's one slot.
  ASSERT_TRUE(
      Eventually([&] { return engine_->ListTables()[0].stats.queued == 1; },
                 absl::Seconds(10)));
  EXPECT_EQ(engine_->ListTables()[0].stats.sent, 1);
  int64_t acked = -1;
  ASSERT_TRUE(Ack("q", {"1"}, &acked).ok());
  EXPECT_EQ(acked, 1);
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_EQ(response.rows_size(), 1);
  EXPECT_EQ(RowValue(response.rows(0), 0), "2");

  ASSERT_NO_FATAL_FAILURE(
      Exec(absl::StrCat("ALTER TABLE msgq.q COMMENT '",
                        MessageComment("vt_poller_interval=0.3"), "'")));
  ASSERT_TRUE(engine_->Reload().ok());
  EXPECT_FALSE(reader->Read(&response));
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message(),
            "message table was changed or dropped: reconnect");
}

TEST_F(MessagingServiceTest, AckValidatesIdsAndCountsAcked) {
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 3));
  grpc::Status s = Ack("", {"1"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "table name is empty");
  s = Ack("q", {"1", "2", "3", "4"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "too many ids in one ack: 4 > 3");
  s = Ack("q", {"1", "x"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "malformed message id \"x\": the id column is an integer");
  int64_t acked = -1;
  s = Ack("q", {}, &acked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(acked, 0);
  // 2 and 3 exist and are unacked; 9 does not exist; "02" is 2 again.
  s = Ack("q", {"2", "3", "9"}, &acked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(acked, 2);
  s = Ack("q", {"02"}, &acked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(acked, 0);
  EXPECT_EQ(db_->Scalar("SELECT GROUP_CONCAT(id ORDER BY id) FROM msgq.q "
                        "WHERE time_acked IS NOT NULL"),
            "2,3");
}

TEST_F(MessagingServiceTest, ExtendAndNackCheckTheirBounds) {
  grpc::Status s = Extend(0);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "extend duration must be more than 0 and at most 60 seconds "
            "(--max_extend), got 0");
  s = Extend(61);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "extend duration must be more than 0 and at most 60 seconds "
            "(--max_extend), got 61");
  s = Extend(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "duration must be a finite number of seconds");
  int64_t extended = -1;
  s = Extend(60, &extended);  // id 1 does not exist: nothing to extend
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(extended, 0);

  grpc::ClientContext context;
  v1::MessageNackRequest nack;
  nack.set_name("q");
  *nack.add_deliveries() = Delivery("1", 1);
  nack.mutable_delay()->set_value(-1);
  v1::MessageNackResponse response;
  s = stub_->MessageNack(&context, nack, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "nack delay must be between 0 and 3153600000 seconds, got -1");
  grpc::ClientContext context2;
  nack.mutable_delay()->set_value(std::numeric_limits<double>::infinity());
  s = stub_->MessageNack(&context2, nack, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "delay must be a finite number of seconds");
  grpc::ClientContext context3;
  nack.clear_delay();
  for (int i = 2; i <= 4; ++i) *nack.add_deliveries() = Delivery("1", i);
  s = stub_->MessageNack(&context3, nack, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "too many deliveries in one nack: 4 > 3");
}

TEST_F(MessagingServiceTest, RedriveListDeadAndListTables) {
  grpc::ClientContext c1;
  v1::RedriveRequest redrive;
  redrive.set_name("q");
  v1::RedriveResponse redriven;
  grpc::Status s = stub_->Redrive(&c1, redrive, &redriven);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "redrive takes either ids or all, not both and not neither");

  grpc::ClientContext c2;
  v1::ListDeadRequest dead;
  dead.set_name("q");
  dead.set_limit(-5);
  v1::ListDeadResponse dead_rows;
  s = stub_->ListDead(&c2, dead, &dead_rows);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "dead list limit must be 1..10000, got -5");

  grpc::ClientContext c3;
  v1::ListTablesResponse tables;
  s = stub_->ListTables(&c3, v1::ListTablesRequest(), &tables);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(tables.tables_size(), 1);
  const v1::TableStatus& t = tables.tables(0);
  EXPECT_EQ(t.keyspace(), "msgq");
  EXPECT_EQ(t.name(), "q");
  EXPECT_TRUE(t.loaded());
  EXPECT_EQ(t.error(), "");
  EXPECT_EQ(t.discovery(), "poll");
  EXPECT_EQ(t.subscribers(), 0);
  EXPECT_DOUBLE_EQ(t.settings().poller_interval(), 0.2);
  EXPECT_FALSE(tables.binlog().streaming());
}

}  // namespace
}  // namespace msgq::testing
