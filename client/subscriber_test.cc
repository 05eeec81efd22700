#include "msgq/subscriber.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/testing/fake_messaging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using testing::FakeMessaging;
using testing::Fields;
using testing::Rows;
using ::testing::UnorderedElementsAre;

constexpr absl::Duration kWait = absl::Seconds(10);

// Collects what the handler saw; fails the ids it is told to.
class Recorder {
 public:
  Subscriber::Handler Handler() {
    return [this](const Message& msg) -> absl::Status {
      absl::MutexLock lock(&mu_);
      ids_.push_back(msg.id());
      std::optional<absl::string_view> body = msg.Get("message");
      bodies_.push_back(body.has_value() ? std::string(*body) : "<NULL>");
      if (std::find(fail_.begin(), fail_.end(), msg.id()) != fail_.end()) {
        return absl::InternalError("handler failed");
      }
      return absl::OkStatus();
    };
  }

  void Fail(std::string id) {
    absl::MutexLock lock(&mu_);
    fail_.push_back(std::move(id));
  }

  bool WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ids_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
  }

  std::vector<std::string> ids() {
    absl::MutexLock lock(&mu_);
    return ids_;
  }
  std::vector<std::string> bodies() {
    absl::MutexLock lock(&mu_);
    return bodies_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> fail_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
};

class SubscriberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/msgq-subscriber-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    ASSERT_TRUE(fake_.Start().ok());
    // Streams not scripted otherwise stay open and silent.
    fake_.SetDefaultStream(
        {.responses = {Fields({"id", "message"})}, .hold_open = true});
  }

  // Fast, deterministic reconnects; acks only on a full batch or Stop().
  SubscriberOptions Options() {
    SubscriberOptions options;
    options.backoff = {.initial = absl::Milliseconds(1),
                       .max = absl::Milliseconds(5),
                       .jitter = 0};
    options.ack = {.max_batch = 100, .max_delay = absl::Hours(1)};
    return options;
  }

  std::unique_ptr<Subscriber> Start(SubscriberOptions options,
                                    TableRef table = {"ks", "orders"}) {
    absl::StatusOr<std::unique_ptr<Subscriber>> subscriber =
        Subscriber::Start(NewChannel(fake_.address()), std::move(table),
                          recorder_.Handler(), std::move(options));
    EXPECT_TRUE(subscriber.ok()) << subscriber.status();
    return subscriber.ok() ? *std::move(subscriber) : nullptr;
  }

  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // A Unix socket path of this test's own: a server stopped there can be
  // started there again (a freed TCP port may be taken meanwhile), and
  // nothing listens there unless the test starts it.
  std::string SocketPath(const std::string& name) const {
    return dir_ + "/" + name + ".sock";
  }

  std::string dir_;
  FakeMessaging fake_;
  Recorder recorder_;
};

TEST_F(SubscriberTest, DeliversDecodedMessagesAndAcksThemInOneCall) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1", "hello"}, {"2", std::nullopt}}),
                                 Rows({{"3", ""}})},
                   .hold_open = true});
  SubscriberOptions options = Options();
  options.ack.max_batch = 3;
  std::unique_ptr<Subscriber> subscriber = Start(options);

  ASSERT_TRUE(fake_.WaitForAckedIds(3, kWait));
  EXPECT_THAT(recorder_.ids(), ElementsAre("1", "2", "3"));
  EXPECT_THAT(recorder_.bodies(), ElementsAre("hello", "<NULL>", ""));
  std::vector<v1::MessageAckRequest> acks = fake_.ack_requests();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].keyspace(), "ks");
  EXPECT_EQ(acks[0].name(), "orders");
  EXPECT_THAT(acks[0].ids(), ElementsAre("1", "2", "3"));

  std::vector<v1::MessageStreamRequest> streams = fake_.stream_requests();
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(streams[0].keyspace(), "ks");
  EXPECT_EQ(streams[0].name(), "orders");

  subscriber->Stop();
  Subscriber::Stats stats = subscriber->stats();
  EXPECT_EQ(stats.received, 3);
  EXPECT_EQ(stats.handled, 3);
  EXPECT_EQ(stats.acked, 3);
  EXPECT_EQ(stats.ack_calls, 1);
  EXPECT_EQ(stats.streams_started, 1);
}

TEST_F(SubscriberTest, AFailedHandlerNacksWithTheTableBackoff) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1", "a"}, {"2", "b"}, {"3", "c"}})},
                   .hold_open = true});
  recorder_.Fail("2");
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  ASSERT_TRUE(recorder_.WaitFor(3));
  subscriber->Stop();  // flushes
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1", "3"));
  std::vector<v1::MessageNackRequest> nacks = fake_.nack_requests();
  ASSERT_EQ(nacks.size(), 1u);
  EXPECT_EQ(nacks[0].keyspace(), "ks");
  EXPECT_EQ(nacks[0].name(), "orders");
  ASSERT_EQ(nacks[0].deliveries_size(), 1);
  EXPECT_EQ(nacks[0].deliveries(0).id(), "2");
  EXPECT_EQ(nacks[0].deliveries(0).epoch(), 0);
  EXPECT_FALSE(nacks[0].has_delay());
  EXPECT_EQ(nacks[0].reason(), "handler failed");
  EXPECT_FALSE(nacks[0].dead());
  Subscriber::Stats stats = subscriber->stats();
  EXPECT_EQ(stats.failed, 1);
  EXPECT_EQ(stats.handled, 2);
  EXPECT_EQ(stats.retried, 1);
  EXPECT_EQ(stats.dead, 0);
  EXPECT_EQ(stats.nack_calls, 1);
}

// SubscriberOptions::group names the consumer group on the stream and on
// every ack and nack; its deliveries are never extended (MessageExtend
// names no group).
TEST_F(SubscriberTest, AGroupIsSentOnTheStreamAcksAndNacks) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1", "a"}, {"2", "b"}, {"3", "c"}})},
                   .hold_open = true});
  recorder_.Fail("2");
  SubscriberOptions options = Options();
  options.group = "billing";
  options.heartbeat.ack_wait = absl::Milliseconds(10);
  std::unique_ptr<Subscriber> subscriber = Start(options);
  ASSERT_TRUE(recorder_.WaitFor(3));
  subscriber->Stop();  // flushes

  std::vector<v1::MessageStreamRequest> streams = fake_.stream_requests();
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(streams[0].group(), "billing");
  std::vector<v1::MessageAckRequest> acks = fake_.ack_requests();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].group(), "billing");
  EXPECT_THAT(acks[0].ids(), ElementsAre("1", "3"));
  std::vector<v1::MessageNackRequest> nacks = fake_.nack_requests();
  ASSERT_EQ(nacks.size(), 1u);
  EXPECT_EQ(nacks[0].group(), "billing");
  ASSERT_EQ(nacks[0].deliveries_size(), 1);
  EXPECT_EQ(nacks[0].deliveries(0).id(), "2");
  EXPECT_TRUE(fake_.extend_requests().empty());
  EXPECT_EQ(subscriber->stats().acked, 2);
}

TEST_F(SubscriberTest, AcksOnTheIntervalWithoutAFullBatch) {
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"5", "x"}})},
                   .hold_open = true});
  SubscriberOptions options = Options();
  options.ack.max_delay = absl::Milliseconds(5);
  std::unique_ptr<Subscriber> subscriber = Start(options);
  ASSERT_TRUE(fake_.WaitForAckedIds(1, kWait));  // before any Stop()
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("5"));
}

TEST_F(SubscriberTest, ReconnectsWhenTheStreamEndsUnavailable) {
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
       .end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "table reloaded")});
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"2", "b"}})},
                   .hold_open = true});
  absl::Mutex mu;
  std::vector<std::string> errors;
  SubscriberOptions options = Options();
  options.on_stream_error = [&](const absl::Status& s, absl::Duration delay) {
    absl::MutexLock lock(&mu);
    errors.push_back(std::string(s.message()));
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(delay, absl::Milliseconds(1));  // reset by the started stream
  };
  std::unique_ptr<Subscriber> subscriber = Start(options);
  ASSERT_TRUE(recorder_.WaitFor(2));
  EXPECT_THAT(recorder_.ids(), ElementsAre("1", "2"));
  EXPECT_FALSE(subscriber->done());
  subscriber->Stop();
  EXPECT_EQ(fake_.stream_requests().size(), 2u);
  EXPECT_EQ(subscriber->stats().reconnects, 1);
  EXPECT_EQ(subscriber->stats().streams_started, 2);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(errors, ElementsAre("table reloaded"));
}

TEST_F(SubscriberTest, PicksUpARestartedServer) {
  const std::string path = SocketPath("restarted");
  FakeMessaging first;
  first.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .hold_open = true});
  ASSERT_TRUE(first.StartOnUnixSocket(path).ok());
  SubscriberOptions options = Options();
  options.backoff = {};  // the defaults: 100ms doubling to 5s
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel(first.address()), "orders", recorder_.Handler(), options);
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  ASSERT_TRUE(recorder_.WaitFor(1));
  first.Shutdown();  // ends the stream with UNAVAILABLE

  FakeMessaging restarted;
  restarted.AddStream(
      {.responses = {Fields({"id", "message"}), Rows({{"2", "b"}})},
       .hold_open = true});
  ASSERT_TRUE(restarted.StartOnUnixSocket(path).ok());
  ASSERT_TRUE(recorder_.WaitFor(2));
  EXPECT_THAT(recorder_.ids(), ElementsAre("1", "2"));
  (*subscriber)->Stop();
  // Neither ack was due before the restart: both go to the new server.
  EXPECT_TRUE(first.acked_ids().empty());
  EXPECT_THAT(restarted.acked_ids(), ElementsAre("1", "2"));
  EXPECT_EQ((*subscriber)->stats().streams_started, 2);
}

TEST_F(SubscriberTest, WaitsForAServerThatIsNotUpYet) {
  const std::string path = SocketPath("late");
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel("unix:" + path), "orders", recorder_.Handler(), Options());
  ASSERT_TRUE(subscriber.ok());
  FakeMessaging late;
  late.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                  .hold_open = true});
  ASSERT_TRUE(late.StartOnUnixSocket(path).ok());
  ASSERT_TRUE(recorder_.WaitFor(1));
  (*subscriber)->Stop();
  EXPECT_THAT(late.acked_ids(), ElementsAre("1"));
}

TEST_F(SubscriberTest, BacksOffExponentiallyWhileTheServerRefuses) {
  for (int i = 0; i < 3; ++i) {
    fake_.AddStream({.end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "no")});
  }
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"9", "z"}})},
                   .hold_open = true});
  absl::Mutex mu;
  std::vector<absl::Duration> delays;
  SubscriberOptions options = Options();
  options.backoff.max = absl::Seconds(1);
  options.on_stream_error = [&](const absl::Status&, absl::Duration delay) {
    absl::MutexLock lock(&mu);
    delays.push_back(delay);
  };
  std::unique_ptr<Subscriber> subscriber = Start(options);
  ASSERT_TRUE(recorder_.WaitFor(1));
  EXPECT_THAT(recorder_.ids(), ElementsAre("9"));
  EXPECT_EQ(fake_.stream_requests().size(), 4u);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(delays, ElementsAre(absl::Milliseconds(1), absl::Milliseconds(2),
                                  absl::Milliseconds(4)));
}

TEST_F(SubscriberTest, NotFoundEndsTheSubscription) {
  fake_.AddStream({.end = grpc::Status(grpc::StatusCode::NOT_FOUND,
                                       "no message table ks.orders")});
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  absl::Status status = subscriber->Wait();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no message table ks.orders");
  EXPECT_TRUE(subscriber->done());
  EXPECT_EQ(fake_.stream_requests().size(), 1u);
  EXPECT_EQ(subscriber->stats().reconnects, 0);
}

TEST_F(SubscriberTest, FailedPreconditionAfterAReconnectEndsIt) {
  fake_.AddStream({.responses = {Fields({"id", "message"})},
                   .end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "bye")});
  fake_.AddStream({.end = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                       "table failed to load")});
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  EXPECT_EQ(subscriber->Wait().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fake_.stream_requests().size(), 2u);
}

TEST_F(SubscriberTest, RetriesTheFirstConnectionByDefault) {
  fake_.AddStream({.end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")});
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .hold_open = true});
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  ASSERT_TRUE(recorder_.WaitFor(1));
  EXPECT_THAT(recorder_.ids(), ElementsAre("1"));
  EXPECT_FALSE(subscriber->done());
  subscriber->Stop();
  EXPECT_EQ(fake_.stream_requests().size(), 2u);
  EXPECT_EQ(subscriber->stats().reconnects, 1);
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1"));
}

TEST_F(SubscriberTest, CanFailFastOnTheFirstConnection) {
  fake_.AddStream({.end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")});
  SubscriberOptions options = Options();
  options.retry_initial_connect = false;
  std::unique_ptr<Subscriber> subscriber = Start(options);
  EXPECT_EQ(subscriber->Wait().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake_.stream_requests().size(), 1u);
}

TEST_F(SubscriberTest, AMalformedResponseEndsItWithInternal) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1"}})},  // one value, two columns
                   .hold_open = true});
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  EXPECT_EQ(subscriber->Wait().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(fake_.stream_requests().size(), 1u);
  EXPECT_TRUE(fake_.WaitForOpenStreams(0, kWait));  // cancelled, not left open
}

TEST_F(SubscriberTest, AFirstResponseWithoutFieldsEndsItWithInternal) {
  fake_.AddStream({.responses = {Rows({{"1", "a"}})}, .hold_open = true});
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  EXPECT_EQ(subscriber->Wait().code(), absl::StatusCode::kInternal);
}

TEST_F(SubscriberTest, StopCancelsTheStreamAndFlushesAcks) {
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .hold_open = true});
  std::unique_ptr<Subscriber> subscriber = Start(Options());
  ASSERT_TRUE(recorder_.WaitFor(1));
  ASSERT_TRUE(fake_.WaitForOpenStreams(1, kWait));
  EXPECT_TRUE(fake_.acked_ids().empty());  // batch not full, delay not over
  subscriber->Stop();
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1"));
  EXPECT_TRUE(subscriber->Wait().ok());
  EXPECT_TRUE(fake_.WaitForOpenStreams(0, kWait));
  subscriber->Stop();  // idempotent
}

TEST_F(SubscriberTest, StopDuringBackoffReturnsPromptly) {
  fake_.SetDefaultStream(
      {.end = grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")});
  SubscriberOptions options = Options();
  options.backoff = {.initial = absl::Hours(1), .max = absl::Hours(1)};
  std::unique_ptr<Subscriber> subscriber = Start(options);
  ASSERT_TRUE(fake_.WaitForStreamCalls(1, kWait));
  const absl::Time start = absl::Now();
  subscriber->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(subscriber->Wait().ok());
}

TEST_F(SubscriberTest, StopWhileWaitingForTheServer) {
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber =
      Subscriber::Start(NewChannel("unix:" + SocketPath("nobody")), "orders",
                        recorder_.Handler(), Options());
  ASSERT_TRUE(subscriber.ok());
  (*subscriber)->Stop();
  EXPECT_TRUE((*subscriber)->Wait().ok());
  EXPECT_EQ((*subscriber)->stats().streams_started, 0);
}

TEST_F(SubscriberTest, HandlersRunConcurrently) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1", "a"}, {"2", "b"}, {"3", "c"}})},
                   .hold_open = true});
  absl::Mutex mu;
  int running = 0;
  int most = 0;
  int saw_all_three = 0;  // handlers that saw three running at once
  SubscriberOptions options = Options();
  options.concurrency = 3;
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel(fake_.address()), "orders",
      [&](const Message&) {
        absl::MutexLock lock(&mu);
        ++running;
        most = std::max(most, running);
        // Holds until all three run at once (or gives up).
        if (mu.AwaitWithTimeout(absl::Condition(
                                    +[](int* r) { return *r >= 3; }, &running),
                                kWait)) {
          ++saw_all_three;
        }
        return absl::OkStatus();
      },
      options);
  ASSERT_TRUE(subscriber.ok());
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](int* m) { return *m >= 3; }, &most),
                                    kWait));
  }
  (*subscriber)->Stop();
  EXPECT_THAT(fake_.acked_ids(), UnorderedElementsAre("1", "2", "3"));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(most, 3);
  EXPECT_EQ(saw_all_three, 3);
}

TEST_F(SubscriberTest, RequestStopFromAHandler) {
  fake_.AddStream(
      {.responses = {Fields({"id", "message"}), Rows({{"1", "a"}, {"2", "b"}})},
       .hold_open = true});
  SubscriberOptions options = Options();
  options.release_unhandled = false;
  absl::Mutex mu;
  Subscriber* self = nullptr;
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel(fake_.address()), "orders",
      [&](const Message&) {
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(
            +[](Subscriber** s) { return *s != nullptr; }, &self));
        self->RequestStop();
        return absl::OkStatus();
      },
      options);
  ASSERT_TRUE(subscriber.ok());
  {
    absl::MutexLock lock(&mu);
    self = subscriber->get();
  }
  EXPECT_TRUE((*subscriber)->Wait().ok());
  (*subscriber)->Stop();
  EXPECT_EQ((*subscriber)->stats().handled, 1);
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1"));
  EXPECT_TRUE(fake_.nack_requests().empty());
}

// release_unhandled (the default): what was received but reached no
// handler when the subscriber stopped is nacked at once (delay 0, no
// reason), not dropped; without it (RequestStopFromAHandler) nothing is
// nacked.
TEST_F(SubscriberTest, ReleaseUnhandledNacksWhatNoHandlerGot) {
  fake_.AddStream({.responses = {Fields({"id", "message"}),
                                 Rows({{"1", "a"}, {"2", "b"}, {"3", "c"}})},
                   .hold_open = true});
  SubscriberOptions options = Options();
  absl::Mutex mu;
  Subscriber* self = nullptr;
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      NewChannel(fake_.address()), "orders",
      [&](const Message&) {
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(
            +[](Subscriber** s) { return *s != nullptr; }, &self));
        self->RequestStop();
        return absl::OkStatus();
      },
      options);
  ASSERT_TRUE(subscriber.ok());
  {
    absl::MutexLock lock(&mu);
    self = subscriber->get();
  }
  EXPECT_TRUE((*subscriber)->Wait().ok());
  (*subscriber)->Stop();
  EXPECT_EQ((*subscriber)->stats().handled, 1);
  EXPECT_THAT(fake_.acked_ids(), ElementsAre("1"));
  std::vector<std::string> released;
  for (const v1::MessageNackRequest& nack : fake_.nack_requests()) {
    EXPECT_TRUE(nack.has_delay());
    EXPECT_EQ(nack.delay().value(), 0);
    EXPECT_EQ(nack.reason(), "");
    EXPECT_FALSE(nack.dead());
    for (const v1::Delivery& d : nack.deliveries()) {
      released.push_back(absl::StrCat(d.id(), ":", d.epoch()));
    }
  }
  EXPECT_THAT(released, UnorderedElementsAre("2:0", "3:0"));
  EXPECT_EQ((*subscriber)->stats().retried, 2);
}

TEST_F(SubscriberTest, AutoAckOffSettlesNothing) {
  fake_.AddStream({.responses = {Fields({"id", "message"}), Rows({{"1", "a"}})},
                   .hold_open = true});
  SubscriberOptions options = Options();
  options.auto_ack = false;
  recorder_.Fail("2");
  fake_.Send(Rows({{"2", "b"}}));
  std::unique_ptr<Subscriber> subscriber = Start(options);
  ASSERT_TRUE(recorder_.WaitFor(2));
  subscriber->Stop();
  EXPECT_TRUE(fake_.ack_requests().empty());
  EXPECT_TRUE(fake_.nack_requests().empty());
  EXPECT_EQ(subscriber->stats().handled, 1);
  EXPECT_EQ(subscriber->stats().failed, 1);
}

TEST(SubscriberStartTest, RejectsBadArguments) {
  auto channel = NewChannel("127.0.0.1:1");
  auto ok = [](const Message&) { return absl::OkStatus(); };
  EXPECT_EQ(Subscriber::Start(nullptr, "t", ok).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Subscriber::Start(channel, "t", nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Subscriber::Start(channel, "", ok).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Subscriber::Start(channel, "t", ok, {.concurrency = 0}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace msgq
