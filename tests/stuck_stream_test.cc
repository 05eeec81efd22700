// Subscribers that stop reading, over gRPC: a stream whose client never
// calls Read holds a message only until its ack wait runs out; the resend
// goes to a stream that reads, and the stuck stream gets no new sends while
// another subscriber can take them (docs/flow-control.md#stuck-subscribers).
// The MySQL-port versions are in mysql_protocol_delivery_test.cc.
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Ack wait 3 s and a backoff of 0.5 s: an unacked message is due again
// 3.5 s after its send; polls every 0.2 s read it.
constexpr char kSettings[] =
    "vt_batch_size=1,vt_ack_wait=3,vt_min_backoff=0.5,vt_max_backoff=0.5,"
    "vt_poller_interval=0.2";
constexpr absl::Duration kResendAfter = absl::Milliseconds(3500);

// A MessageStream whose client calls Read only in Drain(). msgqd's writes
// of small batches complete all the same (gRPC's flow-control window takes
// them), so nothing at the transport says the stream is stuck.
class UnreadStream {
 public:
  UnreadStream(v1::Messaging::Stub* stub, const std::string& table) {
    v1::MessageStreamRequest request;
    request.set_name(table);
    reader_ = stub->MessageStream(&context_, request);
  }
  ~UnreadStream() {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
    (void)reader_->Finish();
  }

  // Reads what msgqd sent until nothing more arrives for `quiet`; returns
  // the ids of the rows, in order.
  std::vector<std::string> Drain(absl::Duration quiet) {
    thread_ = std::thread([this] {
      v1::MessageStreamResponse response;
      while (reader_->Read(&response)) {
        absl::MutexLock lock(&mu_);
        for (const v1::Row& row : response.rows()) {
          ids_.push_back(RowValue(row, 0));
        }
        ++responses_;
      }
    });
    int last = -1;
    while (true) {
      absl::SleepFor(quiet);
      absl::MutexLock lock(&mu_);
      if (responses_ == last) return ids_;
      last = responses_;
    }
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader_;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
  int responses_ ABSL_GUARDED_BY(mu_) = 0;
};

class StuckStreamTest : public MsgqTest {
 protected:
  bool WaitForSubscribers(int n) {
    return Eventually(
        [&] { return FindTable(stub_.get(), "q").subscribers() == n; },
        absl::Seconds(10));
  }
  int64_t Sent() {
    int64_t n = -1;
    EXPECT_TRUE(absl::SimpleAtoi(
        db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE epoch > 0"), &n));
    return n;
  }
  // Acks every id `s` received that was not acked yet.
  void AckNew(const StreamCollector& s, std::set<std::string>& acked) {
    std::vector<std::string> ids;
    for (const std::string& id : s.ids()) {
      if (acked.insert(id).second) ids.push_back(id);
    }
    if (ids.empty()) return;
    int64_t n = 0;
    grpc::Status status = AckIds(stub_.get(), "q", ids, &n);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
};

std::set<std::string> Distinct(const std::vector<std::string>& ids) {
  return std::set<std::string>(ids.begin(), ids.end());
}

// Vitess's two-stream case: two messages, one each; stream 2's client never
// reads, and neither acks. The message stream 2 held is resent to stream 1
// once its ack wait runs out, not to stream 2 again.
TEST_F(StuckStreamTest, ResendOfAStuckStreamsMessageGoesToTheReadingOne) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", kSettings));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector reading(stub_.get(), "q");
  ASSERT_TRUE(reading.WaitForFields(absl::Seconds(10)));
  UnreadStream stuck(stub_.get(), "q");
  ASSERT_TRUE(WaitForSubscribers(2));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 2, 2));
  ASSERT_TRUE(Eventually([&] { return Sent() == 2; }, absl::Seconds(10)));
  const absl::Time sent = absl::Now();
  // Round-robin: one message each.
  ASSERT_TRUE(reading.WaitForRows(1, absl::Seconds(5)));
  ASSERT_EQ(reading.row_count(), 1u);
  const std::string own = reading.ids()[0];
  const std::string other = own == "1" ? "2" : "1";
  // Within the ack wait, the backoff and one round of slack.
  ASSERT_TRUE(
      Eventually([&] { return Distinct(reading.ids()).count(other) == 1; },
                 kResendAfter + absl::Seconds(3)))
      << "reading stream got " << absl::StrJoin(reading.ids(), ",") << " in "
      << absl::Now() - sent;
  EXPECT_THAT(Distinct(reading.ids()), UnorderedElementsAre("1", "2"));
}

// A stream that does not read, next to one that reads and acks: once a
// message the stuck stream held ran out its ack wait, the stuck stream gets
// no new sends while the live one has a free slot; the live one takes
// everything, and the stuck one ends up having received that one message
// only.
TEST_F(StuckStreamTest, AStuckStreamGetsNoNewSendsWhileALiveOneTakesThem) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", kSettings));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  StreamCollector live(stub_.get(), "q");
  ASSERT_TRUE(live.WaitForFields(absl::Seconds(10)));
  auto stuck = std::make_unique<UnreadStream>(stub_.get(), "q");
  ASSERT_TRUE(WaitForSubscribers(2));
  std::set<std::string> acked;
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 2, 2));
  ASSERT_TRUE(Eventually([&] { return Sent() == 2; }, absl::Seconds(10)));
  ASSERT_TRUE(live.WaitForRows(1, absl::Seconds(5)));
  ASSERT_EQ(live.row_count(), 1u);
  const std::string held = live.ids()[0] == "1" ? "2" : "1";
  AckNew(live, acked);
  // The stuck stream's message comes to the live one after its ack wait.
  ASSERT_TRUE(Eventually(
      [&] {
        AckNew(live, acked);
        return acked.count(held) == 1;
      },
      kResendAfter + absl::Seconds(5)))
      << "live got " << absl::StrJoin(live.ids(), ",");
  // New messages, each inserted once the one before arrived (so the live
  // stream always has a free slot): all go to the live stream.
  for (int i = 3; i <= 12; ++i) {
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", i, i));
    EXPECT_TRUE(Eventually(
        [&] {
          AckNew(live, acked);
          return acked.count(absl::StrCat(i)) == 1;
        },
        absl::Seconds(5)))
        << i << ": live got " << absl::StrJoin(live.ids(), ",");
  }
  EXPECT_EQ(acked.size(), 12u);
  // What the stuck stream was sent: the one message, once.
  EXPECT_THAT(stuck->Drain(absl::Seconds(1)), ElementsAre(held));
}

}  // namespace
}  // namespace msgq::testing
