#include "msgq/client.h"

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

TEST_F(ClientTest, AckAndNackNameTheGroup) {
  ASSERT_TRUE(client_->Ack("orders", {"1"}, "billing").ok());
  ASSERT_TRUE(client_->Ack("orders", {"2"}).ok());
  ASSERT_TRUE(client_->Nack("orders", {{"3", 0}}, {.group = "billing"}).ok());
  std::vector<v1::MessageAckRequest> acks = fake_.ack_requests();
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].group(), "billing");
  EXPECT_EQ(acks[1].group(), "");
  std::vector<v1::MessageNackRequest> nacks = fake_.nack_requests();
  ASSERT_EQ(nacks.size(), 1u);
  EXPECT_EQ(nacks[0].group(), "billing");
}

TEST_F(ClientTest, AckKeepsTheServersCodeAndMessage) {
  fake_.SetAckStatus(
      grpc::Status(grpc::StatusCode::NOT_FOUND, "no message table msgq.nope"));
  absl::StatusOr<int64_t> acked = client_->Ack("nope", {"1"});
  EXPECT_EQ(acked.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(acked.status().message(), "no message table msgq.nope");
}

TEST_F(ClientTest, NackSendsDeliveriesDelayReasonAndDead) {
  absl::StatusOr<NackResult> retried =
      client_->Nack({"shop", "orders"}, {{"1", 0}, {"22", 3}},
                    {.delay = absl::Milliseconds(1500), .reason = "busy"});
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->retried, 2);
  EXPECT_EQ(retried->dead, 0);

  absl::StatusOr<NackResult> dead = client_->Nack(
      "orders", {{"7", 1}}, {.reason = "bad input", .dead = true});
  ASSERT_TRUE(dead.ok()) << dead.status();
  EXPECT_EQ(dead->retried, 0);
  EXPECT_EQ(dead->dead, 1);

  std::vector<v1::MessageNackRequest> requests = fake_.nack_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].keyspace(), "shop");
  EXPECT_EQ(requests[0].name(), "orders");
  ASSERT_EQ(requests[0].deliveries_size(), 2);
  EXPECT_EQ(requests[0].deliveries(0).id(), "1");
  EXPECT_EQ(requests[0].deliveries(0).epoch(), 0);
  EXPECT_EQ(requests[0].deliveries(1).id(), "22");
  EXPECT_EQ(requests[0].deliveries(1).epoch(), 3);
  ASSERT_TRUE(requests[0].has_delay());
  EXPECT_EQ(requests[0].delay().value(), 1.5);
  EXPECT_EQ(requests[0].reason(), "busy");
  EXPECT_FALSE(requests[0].dead());

  EXPECT_EQ(requests[1].keyspace(), "");
  EXPECT_FALSE(requests[1].has_delay());  // the table's backoff
  EXPECT_EQ(requests[1].reason(), "bad input");
  EXPECT_TRUE(requests[1].dead());
}

TEST_F(ClientTest, NackWithZeroDelaySendsAPresentZero) {
  ASSERT_TRUE(
      client_->Nack("orders", {{"1", 0}}, {.delay = absl::ZeroDuration()})
          .ok());
  ASSERT_EQ(fake_.nack_requests().size(), 1u);
  EXPECT_TRUE(fake_.nack_requests()[0].has_delay());
  EXPECT_EQ(fake_.nack_requests()[0].delay().value(), 0.0);
}

TEST_F(ClientTest, NackAndExtendCountOnlyHeldDeliveries) {
  fake_.MarkLost("2");
  absl::StatusOr<NackResult> nacked =
      client_->Nack("orders", {{"1", 0}, {"2", 0}}, {});
  ASSERT_TRUE(nacked.ok());
  EXPECT_EQ(nacked->retried, 1);
  absl::StatusOr<int64_t> extended =
      client_->Extend("orders", {{"1", 0}, {"2", 0}}, absl::Seconds(30));
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ(*extended, 1);
  std::vector<v1::MessageExtendRequest> requests = fake_.extend_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].name(), "orders");
  EXPECT_EQ(requests[0].duration(), 30.0);
  ASSERT_EQ(requests[0].deliveries_size(), 2);
  EXPECT_EQ(requests[0].deliveries(1).id(), "2");
}

TEST_F(ClientTest, BadArgumentsAndEmptyListsMakeNoCall) {
  EXPECT_EQ(client_->Nack("orders", {{"1", 0}}, {.delay = absl::Seconds(-1)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->Extend("orders", {{"1", 0}}, absl::ZeroDuration())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->ListDead("orders", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<NackResult> none = client_->Nack("orders", {}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->retried + none->dead, 0);
  EXPECT_EQ(*client_->Extend("orders", {}, absl::Seconds(1)), 0);
  EXPECT_EQ(*client_->Redrive("orders", {}), 0);
  EXPECT_TRUE(fake_.nack_requests().empty());
  EXPECT_TRUE(fake_.extend_requests().empty());
  EXPECT_TRUE(fake_.redrive_requests().empty());
  EXPECT_TRUE(fake_.list_dead_requests().empty());
}

v1::DeadMessage Dead(std::string id, int64_t epoch, std::string error,
                     int64_t time_dead = 0, int64_t time_created = 0) {
  v1::DeadMessage m;
  m.set_id(std::move(id));
  m.set_epoch(epoch);
  m.set_last_error(std::move(error));
  m.set_time_dead(time_dead);
  m.set_time_created(time_created);
  return m;
}

TEST_F(ClientTest, ListDeadPagesAndRedriveTakesIdsOrAll) {
  fake_.SetDeadMessages({Dead("1", 5, "timeout"),
                         Dead("2", 1, "bad", 1'700'000'002'000'000'001,
                              1'700'000'000'500'000'000),
                         Dead("3", 2, "")});
  absl::StatusOr<std::vector<DeadMessage>> page =
      client_->ListDead({"shop", "orders"}, 2, "1");
  ASSERT_TRUE(page.ok()) << page.status();
  // Unix ns become absl::Time; 0 (a table without the column) nullopt.
  EXPECT_THAT(
      *page,
      ElementsAre(
          DeadMessage{
              .id = "2",
              .epoch = 1,
              .last_error = "bad",
              .time_dead = absl::FromUnixNanos(1'700'000'002'000'000'001),
              .time_created = absl::FromUnixMillis(1'700'000'000'500)},
          DeadMessage{.id = "3", .epoch = 2}));
  ASSERT_EQ(fake_.list_dead_requests().size(), 1u);
  EXPECT_EQ(fake_.list_dead_requests()[0].keyspace(), "shop");
  EXPECT_EQ(fake_.list_dead_requests()[0].limit(), 2);
  EXPECT_EQ(fake_.list_dead_requests()[0].after_id(), "1");

  absl::StatusOr<int64_t> one = client_->Redrive("orders", {"2", "99"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(*one, 1);
  absl::StatusOr<int64_t> rest = client_->RedriveAll("orders");
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, 2);
  std::vector<v1::RedriveRequest> requests = fake_.redrive_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0].ids(), ElementsAre("2", "99"));
  EXPECT_FALSE(requests[0].all());
  EXPECT_TRUE(requests[1].ids().empty());
  EXPECT_TRUE(requests[1].all());
}

TEST_F(ClientTest, FailureCallsKeepTheServersCode) {
  fake_.SetFailureRpcStatus(
      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "not yet"));
  EXPECT_EQ(client_->Nack("orders", {{"1", 0}}, {}).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(client_->Extend("orders", {{"1", 0}}, absl::Seconds(1))
                .status()
                .message(),
            "not yet");
  EXPECT_EQ(client_->RedriveAll("orders").status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(client_->ListDead("orders").status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(ClientTest, ListTablesReturnsEveryTable) {
  v1::ListTablesResponse tables;
  v1::TableStatus* loaded = tables.add_tables();
  loaded->set_keyspace("msgq");
  loaded->set_name("orders");
  loaded->set_loaded(true);
  loaded->set_subscribers(2);
  loaded->set_discovery("binlog");
  v1::TableSettings* settings = loaded->mutable_settings();
  settings->set_ack_wait(30);
  settings->set_purge_after(3600);
  settings->set_batch_size(100);
  settings->set_cache_size(5000);
  settings->set_poller_interval(0.5);
  settings->set_min_backoff(0.25);
  settings->set_max_backoff(60);
  settings->add_message_cols("id");
  settings->add_message_cols("message");
  settings->set_max_attempts(5);
  settings->set_max_age(86400);
  settings->set_dead_retention(604800);
  settings->set_rate_limit(50);
  settings->set_rate_burst(10);
  settings->set_order_by("customer");
  settings->set_fair_by("tenant");
  settings->set_concurrency_by("account");
  settings->set_concurrency(3);
  loaded->set_cached(7);
  loaded->set_in_flight(3);
  loaded->set_dead(1);
  loaded->set_sent(20);
  loaded->set_redelivered(4);
  loaded->set_postponed(2);
  loaded->set_acked(15);
  loaded->set_nacked(6);
  loaded->set_died(1);
  loaded->set_purged(9);
  loaded->set_polls(11);
  v1::Ownership* ownership = loaded->mutable_ownership();
  ownership->set_state("owner");
  ownership->set_owner("msgqd-a");
  ownership->set_since(1'700'000'000'000'000'000);
  ownership->set_expires(1'700'000'010'000'000'000);
  loaded->set_paused(true);
  loaded->set_keys_at_limit(2);
  v1::TableStatus* broken = tables.add_tables();
  broken->set_name("broken");
  broken->set_error("vt_ack_wait missing");
  broken->set_dead(-1);
  broken->mutable_ownership()->set_state("unknown");
  broken->mutable_ownership()->set_error("no lease table");
  fake_.SetTables(tables);

  absl::StatusOr<std::vector<TableStatus>> listed = client_->ListTables();
  ASSERT_TRUE(listed.ok()) << listed.status();
  // Seconds become absl::Duration, Unix ns absl::Time (0: nullopt).
  const TableStatus want_loaded = {
      .keyspace = "msgq",
      .name = "orders",
      .loaded = true,
      .subscribers = 2,
      .discovery = "binlog",
      .settings = {.ack_wait = absl::Seconds(30),
                   .purge_after = absl::Hours(1),
                   .batch_size = 100,
                   .cache_size = 5000,
                   .poller_interval = absl::Milliseconds(500),
                   .min_backoff = absl::Milliseconds(250),
                   .max_backoff = absl::Minutes(1),
                   .message_cols = {"id", "message"},
                   .max_attempts = 5,
                   .max_age = absl::Hours(24),
                   .dead_retention = absl::Hours(7 * 24),
                   .rate_limit = 50,
                   .rate_burst = 10,
                   .order_by = "customer",
                   .fair_by = "tenant",
                   .concurrency_by = "account",
                   .concurrency = 3},
      .cached = 7,
      .in_flight = 3,
      .dead = 1,
      .sent = 20,
      .redelivered = 4,
      .postponed = 2,
      .acked = 15,
      .nacked = 6,
      .died = 1,
      .purged = 9,
      .polls = 11,
      .ownership = {.state = "owner",
                    .owner = "msgqd-a",
                    .since = absl::FromUnixSeconds(1'700'000'000),
                    .expires = absl::FromUnixSeconds(1'700'000'010)},
      .paused = true,
      .keys_at_limit = 2};
  const TableStatus want_broken = {
      .name = "broken",
      .error = "vt_ack_wait missing",
      .dead = -1,
      .ownership = {.state = "unknown", .error = "no lease table"}};
  EXPECT_THAT(*listed, ElementsAre(want_loaded, want_broken));
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
