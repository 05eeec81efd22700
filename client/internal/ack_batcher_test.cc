#include "client/internal/ack_batcher.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;

// Records sends and answers them from a script (OK once it runs out).
class FakeSender {
 public:
  explicit FakeSender(std::vector<absl::Status> script = {})
      : script_(std::move(script)) {}

  AckBatcher::SendFn Fn() {
    return [this](std::vector<std::string> ids) {
      absl::MutexLock lock(&mu_);
      batches_.push_back(std::move(ids));
      if (next_ < script_.size()) return script_[next_++];
      return absl::OkStatus();
    };
  }

  bool WaitForBatches(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return batches_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }

  std::vector<std::vector<std::string>> batches() {
    absl::MutexLock lock(&mu_);
    return batches_;
  }

 private:
  absl::Mutex mu_;
  std::vector<absl::Status> script_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::vector<std::string>> batches_ ABSL_GUARDED_BY(mu_);
};

constexpr absl::Duration kForever = absl::Hours(1);

TEST(AckBatcherTest, SendsAFullBatchAtOnceAndTheRestOnClose) {
  FakeSender sender;
  AckBatcher batcher({.max_batch = 3, .max_delay = kForever}, sender.Fn(),
                     nullptr);
  for (const char* id : {"1", "2", "3", "4", "5"}) EXPECT_TRUE(batcher.Add(id));
  ASSERT_TRUE(sender.WaitForBatches(1));
  batcher.Close();
  EXPECT_THAT(sender.batches(),
              ElementsAre(ElementsAre("1", "2", "3"), ElementsAre("4", "5")));
}

TEST(AckBatcherTest, SendsAPartialBatchAfterTheDelay) {
  FakeSender sender;
  AckBatcher batcher({.max_batch = 100, .max_delay = absl::Milliseconds(5)},
                     sender.Fn(), nullptr);
  batcher.Add("7");
  ASSERT_TRUE(sender.WaitForBatches(1));  // no Close() needed
  EXPECT_THAT(sender.batches(), ElementsAre(ElementsAre("7")));
}

TEST(AckBatcherTest, CloseWithNothingPendingSendsNothing) {
  FakeSender sender;
  AckBatcher batcher({}, sender.Fn(), nullptr);
  batcher.Close();
  batcher.Close();  // idempotent
  EXPECT_TRUE(sender.batches().empty());
  EXPECT_FALSE(batcher.Add("1"));
}

TEST(AckBatcherTest, RetriesRetryableFailuresUpToMaxAttempts) {
  FakeSender sender(
      {absl::UnavailableError("down"), absl::DeadlineExceededError("slow")});
  std::vector<absl::StatusCode> errors;
  AckBatcher batcher(
      {.max_batch = 10, .max_delay = kForever, .max_attempts = 3}, sender.Fn(),
      [&errors](const absl::Status& s) { errors.push_back(s.code()); });
  batcher.Add("1");
  batcher.Add("2");
  batcher.Close();
  EXPECT_THAT(sender.batches(),
              ElementsAre(ElementsAre("1", "2"), ElementsAre("1", "2"),
                          ElementsAre("1", "2")));
  EXPECT_THAT(errors, ElementsAre(absl::StatusCode::kUnavailable,
                                  absl::StatusCode::kDeadlineExceeded));
}

TEST(AckBatcherTest, GivesUpAfterMaxAttempts) {
  FakeSender sender({absl::UnavailableError("1"), absl::UnavailableError("2"),
                     absl::UnavailableError("3")});
  AckBatcher batcher({.max_delay = kForever, .max_attempts = 2}, sender.Fn(),
                     nullptr);
  batcher.Add("1");
  batcher.Close();
  EXPECT_EQ(sender.batches().size(), 2u);
}

TEST(AckBatcherTest, DropsNonRetryableFailures) {
  FakeSender sender({absl::NotFoundError("no table")});
  int errors = 0;
  AckBatcher batcher({.max_delay = kForever}, sender.Fn(),
                     [&errors](const absl::Status&) { ++errors; });
  batcher.Add("1");
  batcher.Close();
  EXPECT_EQ(sender.batches().size(), 1u);
  EXPECT_EQ(errors, 1);
}

}  // namespace
}  // namespace msgq
