// Subscriber's failure handling against the fake server: nacks from handler
// results and heartbeats (extends) of running handlers.
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/testing/fake_messaging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "msgq/subscriber.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using testing::Fields;
using testing::Rows;

constexpr absl::Duration kWait = absl::Seconds(10);

class SubscriberFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.Start().ok());
    fake_.SetDefaultStream(
        {.responses = {Fields({"id", "message"})}, .hold_open = true});
  }

  // Acks only on a full batch or Stop(); no heartbeat unless asked for.
  SubscriberOptions Options() {
    SubscriberOptions options;
    options.backoff = {.initial = absl::Milliseconds(1),
                       .max = absl::Milliseconds(5),
                       .jitter = 0};
    options.ack = {.max_batch = 100, .max_delay = absl::Hours(1)};
    options.heartbeat.max_extension = absl::ZeroDuration();
    return options;
  }

  std::unique_ptr<Subscriber> Start(Subscriber::Handler handler,
                                    SubscriberOptions options) {
    absl::StatusOr<std::unique_ptr<Subscriber>> subscriber =
        Subscriber::Start(NewChannel(fake_.address()), {"ks", "orders"},
                          std::move(handler), std::move(options));
    EXPECT_TRUE(subscriber.ok()) << subscriber.status();
    return subscriber.ok() ? *std::move(subscriber) : nullptr;
  }

  // Lists ks.orders, loaded, with `ack_wait`.
  void SetAckWait(double seconds) {
    v1::ListTablesResponse tables;
    v1::TableStatus* t = tables.add_tables();
    t->set_keyspace("ks");
    t->set_name("orders");
    t->set_loaded(true);
    t->mutable_settings()->set_ack_wait(seconds);
    fake_.SetTables(tables);
  }

  testing::FakeMessaging fake_;
};

v1::MessageStreamResponse WithEpochs(v1::MessageStreamResponse response,
                                     std::vector<int64_t> epochs) {
  for (size_t i = 0; i < epochs.size(); ++i) {
    response.mutable_rows(static_cast<int>(i))->set_epoch(epochs[i]);
  }
  return response;
}

TEST_F(SubscriberFailureTest, HandlerResultsBecomeNacksWithTheirEpochs) {
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), WithEpochs(Rows({{"1", "retry"},
                                                                 {"2", "later"},
                                                                 {"3", "dead"},
                                                                 {"4", "ack"}}),
                                                           {0, 2, 5, 1})},
       .hold_open = true});
  fake_.MarkLost("2");  // someone else holds it: the nack counts 0
  std::unique_ptr<Subscriber> subscriber = Start(
      [](const Message& msg) -> HandlerResult {
        const absl::string_view body = *msg.Get("message");
        if (body == "retry") return HandlerResult::Retry("try again");
        if (body == "later") {
          return HandlerResult::RetryAfter(absl::Milliseconds(2500), "slow");
        }
        if (body == "dead") return HandlerResult::Dead("poison");
        return HandlerResult::Ack();
      },
      [&] {
        SubscriberOptions options = Options();
        options.ack.max_batch = 1;
        return options;
      }());
  ASSERT_TRUE(fake_.WaitForNackCalls(3, kWait));
  ASSERT_TRUE(fake_.WaitForAckedIds(1, kWait));
  subscriber->Stop();
  std::vector<v1::MessageNackRequest> nacks = fake_.nack_requests();
  ASSERT_EQ(nacks.size(), 3u);
  for (const auto& n : nacks) ASSERT_EQ(n.deliveries_size(), 1);
  EXPECT_EQ(nacks[0].deliveries(0).id(), "1");
  EXPECT_EQ(nacks[0].deliveries(0).epoch(), 0);
  EXPECT_FALSE(nacks[0].has_delay());
  EXPECT_EQ(nacks[0].reason(), "try again");
  EXPECT_FALSE(nacks[0].dead());
  EXPECT_EQ(nacks[1].deliveries(0).id(), "2");
  EXPECT_EQ(nacks[1].deliveries(0).epoch(), 2);
  ASSERT_TRUE(nacks[1].has_delay());
  EXPECT_EQ(nacks[1].delay().value(), 2.5);
  EXPECT_EQ(nacks[1].reason(), "slow");
  EXPECT_FALSE(nacks[1].dead());
  EXPECT_EQ(nacks[2].deliveries(0).id(), "3");
  EXPECT_EQ(nacks[2].deliveries(0).epoch(), 5);
  EXPECT_FALSE(nacks[2].has_delay());
  EXPECT_EQ(nacks[2].reason(), "poison");
  EXPECT_TRUE(nacks[2].dead());
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("4"));
  Subscriber::Stats stats = subscriber->stats();
  EXPECT_EQ(stats.handled, 1);
  EXPECT_EQ(stats.failed, 3);
  EXPECT_EQ(stats.retried, 1);
  EXPECT_EQ(stats.dead, 1);
  EXPECT_EQ(stats.nack_calls, 3);
}

TEST_F(SubscriberFailureTest, AFailedNackIsReported) {
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .hold_open = true});
  fake_.SetFailureRpcStatus(
      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "old server"));
  absl::Mutex mu;
  std::vector<absl::Status> errors;
  SubscriberOptions options = Options();
  options.on_nack_error = [&](const absl::Status& s) {
    absl::MutexLock lock(&mu);
    errors.push_back(s);
  };
  std::unique_ptr<Subscriber> subscriber = Start(
      [](const Message&) { return absl::UnavailableError("backend down"); },
      options);
  ASSERT_TRUE(fake_.WaitForNackCalls(1, kWait));
  subscriber->Stop();
  EXPECT_EQ(fake_.nack_requests().size(), 1u);  // not retried
  EXPECT_EQ(subscriber->stats().nack_calls, 0);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(errors, ElementsAre(absl::UnimplementedError("old server")));
}

TEST_F(SubscriberFailureTest, ExtendsARunningHandlersDeliveryUntilItReturns) {
  SetAckWait(0.04);  // learned from ListTables at the stream start
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 WithEpochs(Rows({{"8", "slow"}}), {3})},
                   .hold_open = true});
  SubscriberOptions options = Options();
  options.heartbeat = {.fraction = 0.5, .max_extension = absl::Seconds(60)};
  std::unique_ptr<Subscriber> subscriber = Start(
      [this](const Message&) {
        // Runs until two heartbeats went out.
        return fake_.WaitForExtendCalls(2, kWait)
                   ? absl::OkStatus()
                   : absl::DeadlineExceededError("no heartbeat");
      },
      options);
  ASSERT_TRUE(fake_.WaitForExtendCalls(2, kWait));
  subscriber->Stop();
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("8"));
  std::vector<v1::MessageExtendRequest> extends = fake_.extend_requests();
  ASSERT_GE(extends.size(), 2u);
  for (const v1::MessageExtendRequest& e : extends) {
    EXPECT_EQ(e.keyspace(), "ks");
    EXPECT_EQ(e.name(), "orders");
    ASSERT_EQ(e.deliveries_size(), 1);
    EXPECT_EQ(e.deliveries(0).id(), "8");
    EXPECT_EQ(e.deliveries(0).epoch(), 3);
    EXPECT_EQ(e.duration(), 0.04);
  }
  EXPECT_EQ(subscriber->stats().extended, static_cast<int64_t>(extends.size()));
  EXPECT_EQ(subscriber->stats().lost, 0);
  EXPECT_EQ(subscriber->stats().handled, 1);
}

TEST_F(SubscriberFailureTest, ALostDeliveryIsCountedAndNotExtendedAgain) {
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), Rows({{"1", "slow"}})},
       .hold_open = true});
  fake_.MarkLost("1");
  SubscriberOptions options = Options();
  options.heartbeat = {.fraction = 0.5,
                       .max_extension = absl::Seconds(60),
                       .ack_wait = absl::Milliseconds(20)};  // no lookup
  absl::Mutex mu;
  bool release = false;
  std::unique_ptr<Subscriber> subscriber = Start(
      [&](const Message&) {
        absl::MutexLock lock(&mu);
        mu.AwaitWithTimeout(absl::Condition(&release), kWait);
        return absl::OkStatus();
      },
      options);
  ASSERT_TRUE(fake_.WaitForExtendCalls(1, kWait));
  // The answer is counted before the heartbeat looks again; a few more
  // intervals show it does not.
  ASSERT_FALSE(fake_.WaitForExtendCalls(2, absl::Milliseconds(200)));
  {
    absl::MutexLock lock(&mu);
    release = true;
  }
  subscriber->Stop();
  EXPECT_EQ(fake_.extend_requests().size(), 1u);
  EXPECT_EQ(subscriber->stats().lost, 1);
  EXPECT_EQ(subscriber->stats().extended, 0);
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1"));
}

TEST_F(SubscriberFailureTest, AnUnlistedTableIsReportedAndNotExtended) {
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .hold_open = true});
  absl::Mutex mu;
  std::vector<absl::Status> errors;
  SubscriberOptions options = Options();
  options.heartbeat = {.max_extension = absl::Seconds(60)};
  options.ack.max_batch = 1;
  options.on_heartbeat_error = [&](const absl::Status& s) {
    absl::MutexLock lock(&mu);
    errors.push_back(s);
  };
  std::unique_ptr<Subscriber> subscriber =
      Start([](const Message&) { return absl::OkStatus(); }, options);
  {
    absl::MutexLock lock(&mu);
    auto reported = [&] { return !errors.empty(); };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&reported), kWait));
  }
  ASSERT_TRUE(fake_.WaitForAckedIds(1, kWait));
  subscriber->Stop();
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1"));
  EXPECT_TRUE(fake_.extend_requests().empty());
  absl::MutexLock lock(&mu);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(errors[0].message(),
            "ListTables has no loaded table ks.orders with an ack_wait; not "
            "extending deliveries");
}

}  // namespace
}  // namespace msgq
