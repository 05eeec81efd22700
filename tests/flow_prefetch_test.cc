// Per-subscriber prefetch end to end (docs/flow-control.md#prefetch): a stream
// asking for max_unacked=5 never holds more than 5 unacked messages, and gets
// the rest as it acks.
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

// Reads one stream with max_unacked on a thread of its own.
class LimitedStream {
 public:
  LimitedStream(v1::Messaging::Stub* stub, const std::string& table,
                int max_unacked) {
    request_.set_name(table);
    request_.set_max_unacked(max_unacked);
    thread_ = std::thread([this, stub] {
      auto reader = stub->MessageStream(&context_, request_);
      v1::MessageStreamResponse r;
      while (reader->Read(&r)) {
        absl::MutexLock lock(&mu_);
        for (const v1::Row& row : r.rows()) ids_.push_back(RowValue(row, 0));
      }
      grpc::Status s = reader->Finish();
      absl::MutexLock lock(&mu_);
      status_ = s;
      ended_ = true;
    });
  }
  ~LimitedStream() {
    context_.TryCancel();
    thread_.join();
  }
  std::vector<std::string> ids() const {
    absl::MutexLock lock(&mu_);
    return ids_;
  }
  size_t count() const { return ids().size(); }
  bool ended() const {
    absl::MutexLock lock(&mu_);
    return ended_;
  }
  grpc::Status status() const {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  grpc::ClientContext context_;
  v1::MessageStreamRequest request_;
  mutable absl::Mutex mu_;
  std::vector<std::string> ids_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class FlowPrefetchTest : public MsgqTest {};

TEST_F(FlowPrefetchTest, NeverHoldsMoreThanMaxUnackedAndGetsTheRestOnAcks) {
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_poller_interval=0.1,vt_batch_size=3"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 20));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  LimitedStream s(stub_.get(), "q", 5);
  ASSERT_TRUE(Eventually([&] { return s.count() == 5; }, absl::Seconds(10)));
  // Polls pass (0.1 s each); nothing more arrives while 5 are unacked.
  absl::SleepFor(absl::Seconds(1));
  ASSERT_EQ(s.count(), 5u);

  size_t acked = 0;
  while (acked < 20) {
    std::vector<std::string> ids = s.ids();
    ASSERT_LE(ids.size() - acked, 5u) << "more than 5 unacked";
    if (ids.size() == acked) {
      ASSERT_TRUE(
          Eventually([&] { return s.count() > acked; }, absl::Seconds(10)))
          << "nothing more after " << acked << " acks";
      continue;
    }
    // Ack two at a time (or what is left).
    const size_t n = std::min<size_t>(2, ids.size() - acked);
    std::vector<std::string> batch(ids.begin() + acked,
                                   ids.begin() + acked + n);
    int64_t done = 0;
    grpc::Status ack = AckIds(stub_.get(), "q", batch, &done);
    ASSERT_TRUE(ack.ok()) << ack.error_message();
    ASSERT_EQ(done, static_cast<int64_t>(n));
    acked += n;
  }
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(s.count(), 20u);  // each exactly once
  std::vector<std::string> ids = s.ids();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
}

TEST_F(FlowPrefetchTest, NegativeMaxUnackedIsRefused) {
  ASSERT_NO_FATAL_FAILURE(CreateTable("q"));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  LimitedStream s(stub_.get(), "q", -1);
  ASSERT_TRUE(Eventually([&] { return s.ended(); }, absl::Seconds(10)));
  EXPECT_EQ(s.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.status().error_message(), "max_unacked must be >= 0, got -1");
}

}  // namespace
}  // namespace msgq::testing
