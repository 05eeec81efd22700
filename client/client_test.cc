#include "client/client.h"

#include <memory>
#include <string>
#include <vector>

#include "client/testing/fake_messaging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.Start().ok());
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Connect(fake_.address(), {.timeout = absl::Seconds(10)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  testing::FakeMessaging fake_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, AckSendsTableAndIds) {
  absl::StatusOr<int64_t> acked = client_->Ack({"shop", "orders"}, {"1", "22"});
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_EQ(*acked, 2);
  std::vector<v1::MessageAckRequest> requests = fake_.ack_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].keyspace(), "shop");
  EXPECT_EQ(requests[0].name(), "orders");
  EXPECT_THAT(requests[0].ids(), ElementsAre("1", "22"));
}

TEST_F(ClientTest, AckWithoutIdsMakesNoCall) {
  absl::StatusOr<int64_t> acked = client_->Ack("orders", {});
  ASSERT_TRUE(acked.ok());
  EXPECT_EQ(*acked, 0);
  EXPECT_TRUE(fake_.ack_requests().empty());
}

TEST_F(ClientTest, AckKeepsTheServersCodeAndMessage) {
  fake_.SetAckStatus(
      grpc::Status(grpc::StatusCode::NOT_FOUND, "no message table msgq.nope"));
  absl::StatusOr<int64_t> acked = client_->Ack("nope", {"1"});
  EXPECT_EQ(acked.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(acked.status().message(), "no message table msgq.nope");
}

TEST_F(ClientTest, ListTablesReturnsEveryTable) {
  v1::ListTablesResponse tables;
  v1::TableStatus* loaded = tables.add_tables();
  loaded->set_keyspace("msgq");
  loaded->set_name("orders");
  loaded->set_loaded(true);
  v1::TableStatus* broken = tables.add_tables();
  broken->set_name("broken");
  broken->set_error("vt_ack_wait missing");
  fake_.SetTables(tables);

  absl::StatusOr<std::vector<v1::TableStatus>> listed = client_->ListTables();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name(), "orders");
  EXPECT_TRUE((*listed)[0].loaded());
  EXPECT_EQ((*listed)[1].error(), "vt_ack_wait missing");
}

TEST_F(ClientTest, CallsHaveADeadline) {
  fake_.SetDelay(absl::Seconds(2));
  Client client(NewChannel(fake_.address()),
                {.timeout = absl::Milliseconds(50)});
  EXPECT_EQ(client.ListTables().status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client.Ack("orders", {"1"}).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(ClientNoServerTest, UnreachableServerIsUnavailable) {
  // Take a port from the kernel, then close it so nothing listens there.
  std::string address;
  {
    testing::FakeMessaging fake;
    ASSERT_TRUE(fake.Start().ok());
    address = fake.address();
  }
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(address);
  ASSERT_TRUE(client.ok());
  absl::Status status = (*client)->ListTables().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST(ClientConnectTest, RejectsBadArguments) {
  EXPECT_EQ(Client::Connect("").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Client::Connect("localhost:1", {.timeout = absl::ZeroDuration()})
                  .status()
                  .message(),
              HasSubstr("timeout"));
}

}  // namespace
}  // namespace msgq
