#include "client/internal/heartbeat.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

struct Call {
  Delivery delivery;
  absl::Duration duration;
  bool operator==(const Call& o) const {
    return delivery == o.delivery && duration == o.duration;
  }
};

std::ostream& operator<<(std::ostream& os, const Call& c) {
  return os << c.delivery.id << ":" << c.delivery.epoch << " for "
            << absl::FormatDuration(c.duration);
}

// A heartbeat on a hand-moved clock whose extends are recorded and answered
// with `answer` (1 = held, 0 = lost, or an error).
class HeartbeatTest : public ::testing::Test {
 protected:
  std::unique_ptr<Heartbeat> Make(HeartbeatOptions options) {
    return std::make_unique<Heartbeat>(
        options,
        [this](const Delivery& d, absl::Duration t) -> absl::StatusOr<int64_t> {
          calls_.push_back({d, t});
          return answer_;
        },
        [this](const absl::Status& s) { errors_.push_back(s); },
        [this] { return now_; });
  }

  // Moves the clock to start + `seconds`, ticks, returns the calls made.
  std::vector<Call> TickAt(Heartbeat& h, double seconds) {
    now_ = kStart + absl::Seconds(seconds);
    calls_.clear();
    h.Tick();
    return calls_;
  }

  const absl::Time kStart = absl::FromUnixSeconds(1700000000);
  absl::Time now_ = kStart;
  absl::StatusOr<int64_t> answer_ = 1;
  std::vector<Call> calls_;
  std::vector<absl::Status> errors_;
};

TEST_F(HeartbeatTest, ExtendsEveryFractionOfAckWaitByAckWait) {
  auto h = Make({.fraction = 0.5,
                 .max_extension = absl::Seconds(60),
                 .ack_wait = absl::Seconds(10)});
  ASSERT_TRUE(h->enabled());
  h->Begin({"7", 2}, kStart);
  EXPECT_EQ(h->NextDue(), kStart + absl::Seconds(5));
  EXPECT_THAT(TickAt(*h, 4.9), IsEmpty());
  EXPECT_THAT(TickAt(*h, 5), ElementsAre(Call{{"7", 2}, absl::Seconds(10)}));
  EXPECT_EQ(h->NextDue(), kStart + absl::Seconds(10));
  EXPECT_THAT(TickAt(*h, 9), IsEmpty());
  // A late tick extends from when it ran; the next is due 5s after it.
  EXPECT_THAT(TickAt(*h, 11), ElementsAre(Call{{"7", 2}, absl::Seconds(10)}));
  EXPECT_EQ(h->NextDue(), kStart + absl::Seconds(16));
  EXPECT_EQ(h->stats().extended, 2);
  EXPECT_EQ(h->stats().lost, 0);
  EXPECT_THAT(errors_, IsEmpty());
}

TEST_F(HeartbeatTest, NeverHoldsPastMaxExtension) {
  // Deadline cap: received + ack_wait + max_extension = start + 22s.
  auto h = Make({.fraction = 0.5,
                 .max_extension = absl::Seconds(12),
                 .ack_wait = absl::Seconds(10)});
  h->Begin({"1", 0}, kStart);
  EXPECT_THAT(TickAt(*h, 5), ElementsAre(Call{{"1", 0}, absl::Seconds(10)}));
  EXPECT_THAT(TickAt(*h, 10), ElementsAre(Call{{"1", 0}, absl::Seconds(10)}));
  EXPECT_THAT(TickAt(*h, 15), ElementsAre(Call{{"1", 0}, absl::Seconds(7)}));
  EXPECT_THAT(TickAt(*h, 20), ElementsAre(Call{{"1", 0}, absl::Seconds(2)}));
  EXPECT_EQ(h->NextDue(), absl::InfiniteFuture());
  EXPECT_THAT(TickAt(*h, 25), IsEmpty());
  EXPECT_THAT(TickAt(*h, 100), IsEmpty());
}

TEST_F(HeartbeatTest, ALateTickPastTheCapStopsExtending) {
  auto h = Make({.fraction = 0.5,
                 .max_extension = absl::Seconds(1),
                 .ack_wait = absl::Seconds(10)});
  h->Begin({"1", 0}, kStart);
  EXPECT_EQ(h->NextDue(), kStart + absl::Seconds(5));
  EXPECT_THAT(TickAt(*h, 11), IsEmpty());  // cap was start + 11s
  EXPECT_EQ(h->NextDue(), absl::InfiniteFuture());
}

TEST_F(HeartbeatTest, ALostDeliveryIsCountedAndNeverExtendedAgain) {
  auto h =
      Make({.max_extension = absl::Seconds(60), .ack_wait = absl::Seconds(10)});
  h->Begin({"1", 0}, kStart);
  h->Begin({"2", 4}, kStart + absl::Seconds(1));
  answer_ = 0;
  EXPECT_THAT(TickAt(*h, 5), ElementsAre(Call{{"1", 0}, absl::Seconds(10)}));
  answer_ = 1;
  EXPECT_THAT(TickAt(*h, 6), ElementsAre(Call{{"2", 4}, absl::Seconds(10)}));
  EXPECT_THAT(TickAt(*h, 30), ElementsAre(Call{{"2", 4}, absl::Seconds(10)}));
  EXPECT_EQ(h->stats().lost, 1);
  EXPECT_EQ(h->stats().extended, 2);
}

TEST_F(HeartbeatTest, AFailedExtendIsReportedAndTriedAgainNextInterval) {
  auto h =
      Make({.max_extension = absl::Seconds(60), .ack_wait = absl::Seconds(10)});
  h->Begin({"1", 0}, kStart);
  answer_ = absl::UnavailableError("server down");
  EXPECT_EQ(TickAt(*h, 5).size(), 1u);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_EQ(errors_[0], absl::UnavailableError("server down"));
  EXPECT_THAT(TickAt(*h, 9), IsEmpty());
  answer_ = 1;
  EXPECT_THAT(TickAt(*h, 10), ElementsAre(Call{{"1", 0}, absl::Seconds(10)}));
  EXPECT_EQ(h->stats().errors, 1);
  EXPECT_EQ(h->stats().extended, 1);
}

TEST_F(HeartbeatTest, EndStopsExtending) {
  auto h =
      Make({.max_extension = absl::Seconds(60), .ack_wait = absl::Seconds(10)});
  Heartbeat::Ticket a = h->Begin({"1", 0}, kStart);
  h->Begin({"2", 0}, kStart);
  h->End(a);
  EXPECT_THAT(TickAt(*h, 5), ElementsAre(Call{{"2", 0}, absl::Seconds(10)}));
}

TEST_F(HeartbeatTest, NothingIsExtendedWhileAckWaitIsUnknown) {
  auto h = Make({.fraction = 0.25, .max_extension = absl::Seconds(60)});
  h->Begin({"1", 0}, kStart);
  EXPECT_EQ(h->NextDue(), absl::InfiniteFuture());
  EXPECT_THAT(TickAt(*h, 100), IsEmpty());
  h->SetAckWait(absl::Seconds(20));  // learned at a stream start
  EXPECT_EQ(h->NextDue(), kStart + absl::Seconds(5));
  // Already past the cap (start + 80s): not extended.
  EXPECT_THAT(TickAt(*h, 100), IsEmpty());
  h->Begin({"2", 0}, kStart + absl::Seconds(100));
  EXPECT_THAT(TickAt(*h, 105), ElementsAre(Call{{"2", 0}, absl::Seconds(20)}));
  h->SetAckWait(std::nullopt);  // e.g. the lookup failed
  EXPECT_THAT(TickAt(*h, 200), IsEmpty());
}

TEST_F(HeartbeatTest, ZeroMaxExtensionDisablesIt) {
  auto h = Make(
      {.max_extension = absl::ZeroDuration(), .ack_wait = absl::Seconds(10)});
  EXPECT_FALSE(h->enabled());
  h->Begin({"1", 0}, kStart);
  EXPECT_EQ(h->NextDue(), absl::InfiniteFuture());
  EXPECT_THAT(TickAt(*h, 5), IsEmpty());
  h->Start();  // no thread
  h->Close();
}

TEST(HeartbeatThreadTest, ExtendsOnItsOwnThreadUntilEnd) {
  absl::Mutex mu;
  std::vector<Delivery> extended;
  Heartbeat h(
      {.fraction = 0.5,
       .max_extension = absl::Seconds(60),
       .ack_wait = absl::Milliseconds(40)},
      [&](const Delivery& d, absl::Duration t) -> absl::StatusOr<int64_t> {
        absl::MutexLock lock(&mu);
        EXPECT_EQ(t, absl::Milliseconds(40));
        extended.push_back(d);
        return 1;
      },
      nullptr);
  h.Start();
  Heartbeat::Ticket ticket = h.Begin({"9", 1}, absl::Now());
  {
    absl::MutexLock lock(&mu);
    auto three = [&]() { return extended.size() >= 3; };
    ASSERT_TRUE(
        mu.AwaitWithTimeout(absl::Condition(&three), absl::Seconds(10)));
  }
  h.End(ticket);
  h.Close();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(extended[0], (Delivery{"9", 1}));
  EXPECT_EQ(h.stats().extended, static_cast<int64_t>(extended.size()));
}

TEST(AckWaitOfTest, FindsTheLoadedTableInTheKeyspace) {
  v1::ListTablesResponse r;
  auto add = [&](std::string ks, std::string name, bool loaded, double wait) {
    v1::TableStatus* t = r.add_tables();
    t->set_keyspace(std::move(ks));
    t->set_name(std::move(name));
    t->set_loaded(loaded);
    t->mutable_settings()->set_ack_wait(wait);
  };
  add("a", "orders", false, 0);
  add("a", "orders2", true, 7);
  add("b", "orders", true, 30);
  add("c", "orders", true, 1.5);
  std::vector<v1::TableStatus> tables(r.tables().begin(), r.tables().end());
  EXPECT_EQ(AckWaitOf(tables, "orders"), absl::Seconds(30));
  EXPECT_EQ(AckWaitOf(tables, {"c", "orders"}), absl::Milliseconds(1500));
  EXPECT_EQ(AckWaitOf(tables, {"a", "orders"}), std::nullopt);  // not loaded
  EXPECT_EQ(AckWaitOf(tables, "nope"), std::nullopt);
}

}  // namespace
}  // namespace msgq
