// RowSink against a real MessageManager over the in-memory store (no MySQL,
// fake clock, RunOnce driven by hand).
#include "server/mysql_protocol/row_sink.h"

#include <poll.h>

#include "engine/queue/manager/message_manager.h"
#include "engine/queue/manager/message_manager_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq::mysql_protocol {
namespace {

using ::msgq::manager_test::FakeSubscriber;
using ::testing::ElementsAre;

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

std::vector<std::string> Ids(const std::deque<MessageBatch>& batches) {
  std::vector<std::string> ids;
  for (const MessageBatch& b : batches) {
    for (const Message& m : b) ids.push_back(m.id);
  }
  return ids;
}

MessageBatch Batch(const std::string& id) {
  Message m;
  m.id = id;
  return {m};
}

class RowSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = std::make_unique<FakeMessageStore>();
    store_ = store.get();
    absl::StatusOr<MessageTable> table = BuildMessageTable(
        "db", "queue",
        "vitess_message,vt_ack_wait=30,vt_purge_after=3600,vt_batch_size=1,"
        "vt_cache_size=100,vt_poller_interval=3600",
        {{"id", "bigint", "bigint(20)"},
         {"priority", "tinyint", "tinyint(4)"},
         {"epoch", "bigint", "bigint(20)"},
         {"time_next", "bigint", "bigint(20)"},
         {"time_acked", "bigint", "bigint(20)"},
         {"payload", "blob", "blob"}});
    ASSERT_TRUE(table.ok()) << table.status();
    store_->set_schema(FakeMessageStore::SchemaOf(*table));
    manager_ = std::make_shared<MessageManager>(
        *std::move(table), std::move(store), &clock_, &jitter_,
        MessageManager::Options{});
  }
  void PutDue(int first, int last) {
    for (int i = first; i <= last; ++i) {
      store_->PutDue(std::to_string(i), clock_.NowNanos() - 1'000'000'000, 0);
    }
  }

  std::shared_ptr<StreamSource> Source() {
    return std::make_shared<SourceOf<MessageManager>>(manager_);
  }

  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  FixedJitter jitter_{1.0};
  FakeMessageStore* store_ = nullptr;
  std::shared_ptr<MessageManager> manager_;
};

TEST_F(RowSinkTest, DeliversInSequenceOrderAndWakes) {
  auto sink = RowSink::Create(Source());
  ASSERT_TRUE(sink.ok());
  EXPECT_FALSE(Readable((*sink)->wake_fd()));
  (*sink)->Send(1, Batch("b"));
  EXPECT_TRUE(Readable((*sink)->wake_fd()));
  RowSink::Ready early = (*sink)->TakeReady();
  EXPECT_TRUE(early.batches.empty());  // 0 has not arrived yet
  EXPECT_FALSE(Readable((*sink)->wake_fd()));
  (*sink)->Send(0, Batch("a"));
  (*sink)->Send(2, Batch("c"));
  RowSink::Ready ready = (*sink)->TakeReady();
  EXPECT_THAT(Ids(ready.batches), ElementsAre("a", "b", "c"));
  EXPECT_FALSE(ready.closed.has_value());
}

TEST_F(RowSinkTest, CloseIsReportedOnce) {
  auto sink = RowSink::Create(Source());
  ASSERT_TRUE(sink.ok());
  (*sink)->Close(absl::UnavailableError("gone"));
  (*sink)->Close(absl::InternalError("second"));
  EXPECT_TRUE(Readable((*sink)->wake_fd()));
  RowSink::Ready ready = (*sink)->TakeReady();
  ASSERT_TRUE(ready.closed.has_value());
  EXPECT_EQ(ready.closed->code(), absl::StatusCode::kUnavailable);
}

// Finish unsubscribes and hands back what was never taken: the other
// subscriber gets those messages at once, not after the ack wait.
TEST_F(RowSinkTest, FinishHandsUntakenBatchesToTheOthers) {
  PutDue(1, 2);
  auto sink = RowSink::Create(Source());
  ASSERT_TRUE(sink.ok());
  ASSERT_TRUE(manager_->Subscribe(*sink).ok());
  manager_->RunOnce();
  EXPECT_EQ(manager_->stats().subscribers, 1);
  EXPECT_EQ(manager_->stats().in_flight, 2);
  (*sink)->Finish();
  EXPECT_EQ(manager_->stats().subscribers, 0);
  auto other = std::make_shared<FakeSubscriber>();
  ASSERT_TRUE(manager_->Subscribe(other).ok());
  manager_->RunOnce();
  EXPECT_THAT(other->ids(), ElementsAre("1", "2"));
  // A late Send (already under way on an engine thread) is handed back too.
  (*sink)->Send(7, Batch("late"));
  EXPECT_TRUE((*sink)->TakeReady().batches.empty());
}

}  // namespace
}  // namespace msgq::mysql_protocol
