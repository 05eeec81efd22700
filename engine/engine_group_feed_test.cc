#include "engine/engine_group_feed.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;

// Records what it is sent, as "sequence:id/epoch,id/epoch".
class RecordingSubscriber : public Subscriber {
 public:
  void Send(uint64_t sequence, MessageBatch batch) override {
    std::string line = absl::StrCat(sequence, ":");
    for (size_t i = 0; i < batch.size(); ++i) {
      absl::StrAppend(&line, i > 0 ? "," : "", batch[i].id, "/",
                      batch[i].epoch);
    }
    absl::MutexLock lock(&mu_);
    sent_.push_back(line);
    batches_.push_back(std::move(batch));
  }
  void Close(absl::Status status) override {
    absl::MutexLock lock(&mu_);
    closed_ = status;
  }
  std::vector<std::string> sent() const {
    absl::MutexLock lock(&mu_);
    return sent_;
  }
  MessageBatch batch(size_t i) const {
    absl::MutexLock lock(&mu_);
    return batches_.at(i);
  }
  absl::Status closed() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> sent_ ABSL_GUARDED_BY(mu_);
  std::vector<MessageBatch> batches_ ABSL_GUARDED_BY(mu_);
  absl::Status closed_ ABSL_GUARDED_BY(mu_);
};

RowChange Insert(const std::string& id, const std::string& gtid,
                 bool image = true) {
  RowChange c;
  c.inserted = true;
  c.id = id;
  c.time_next = 0;
  c.gtid = gtid;
  if (image) {
    auto row = std::make_shared<PackedRow>();
    row->lengths = {static_cast<int64_t>(id.size())};
    row->values = id;
    c.row = std::move(row);
  }
  return c;
}

RowChange Update(const std::string& id, const std::string& gtid) {
  RowChange c;
  c.id = id;
  c.time_next = 0;
  c.gtid = gtid;
  return c;
}

GroupRow Row(const std::string& floor) {
  GroupRow row;
  row.keyspace = "db";
  row.table = "t";
  row.name = "billing";
  row.floor_gtid = floor;
  return row;
}

TEST(GroupFeedTest, SendsInCommitOrderWithinTheBatchBounds) {
  GroupFeed feed(Row("0-1-10"), /*batch_size=*/2,
                 /*max_batches_per_subscriber=*/1);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges(
      {Insert("9", "0-1-10"), Insert("1", "0-1-11"), Insert("2", "0-1-11")});
  feed.OnRowChanges({Insert("3", "0-1-12"), Update("1", "0-1-13")});
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0"));
  EXPECT_EQ(sub->batch(0)[0].row->values, "1");
  feed.OnSendDone(sub.get());
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:3/0"));

  EXPECT_EQ(feed.Ack({"2", "3"}), 2);
  EXPECT_EQ(feed.floor(), "0-1-10");
  EXPECT_EQ(feed.FloorToWrite(), std::nullopt);
  EXPECT_EQ(feed.Ack({"1"}), 1);
  EXPECT_EQ(feed.floor(), "0-1-12");
  EXPECT_EQ(feed.FloorToWrite(), "0-1-12");
  feed.FloorWritten("0-1-12");
  EXPECT_EQ(feed.FloorToWrite(), std::nullopt);
  GroupFeed::Stats stats = feed.stats();
  EXPECT_EQ(stats.offered, 3);
  EXPECT_EQ(stats.sent, 3);
  EXPECT_EQ(stats.acked, 3);
  EXPECT_EQ(stats.pending, 0u);
}

TEST(GroupFeedTest, FailedBatchesAndLeavingSubscribersGiveMessagesBack) {
  GroupFeed feed(Row(""), 10, 2);
  auto a = std::make_shared<RecordingSubscriber>();
  auto b = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(a, 0).ok());
  feed.OnRowChanges({Insert("1", "0-1-1"), Insert("2", "0-1-1")});
  EXPECT_THAT(a->sent(), ElementsAre("0:1/0,2/0"));
  feed.OnSendFailed(a.get(), a->batch(0));
  EXPECT_THAT(a->sent(), ElementsAre("0:1/0,2/0", "1:1/1,2/1"));
  ASSERT_TRUE(feed.Subscribe(b, 0).ok());
  EXPECT_THAT(b->sent(), ElementsAre());
  feed.Unsubscribe(a.get());
  EXPECT_THAT(b->sent(), ElementsAre("0:1/2,2/2"));
}

TEST(GroupFeedTest, MaxUnackedCutsBatches) {
  GroupFeed feed(Row(""), 10, 2);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, /*max_unacked=*/2).ok());
  feed.OnRowChanges(
      {Insert("1", "0-1-1"), Insert("2", "0-1-1"), Insert("3", "0-1-1")});
  feed.OnSendDone(sub.get());
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0"));
  // An ack makes room.
  EXPECT_EQ(feed.Ack({"1"}), 1);
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:3/0"));
}

TEST(GroupFeedTest, RowsWithoutAnImageAreCountedNotSent) {
  GroupFeed feed(Row(""), 10, 2);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges({Insert("1", "0-1-1", /*image=*/false)});
  EXPECT_THAT(sub->sent(), ElementsAre());
  EXPECT_EQ(feed.stats().no_image, 1);
}

TEST(GroupFeedTest, CloseEndsTheStreams) {
  GroupFeed feed(Row(""), 10, 2);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.Close(absl::UnavailableError("server shutting down"));
  EXPECT_EQ(sub->closed(), absl::UnavailableError("server shutting down"));
  EXPECT_EQ(feed.Subscribe(sub, 0).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace msgq
