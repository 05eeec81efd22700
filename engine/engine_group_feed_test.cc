#include "engine/engine_group_feed.h"

#include <algorithm>
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

class GroupFeedTest : public ::testing::Test {
 protected:
  static GroupFeed::Options Opts(int batch_size, int max_batches) {
    GroupFeed::Options o;
    o.settings.batch_size = batch_size;
    o.settings.ack_wait = absl::Seconds(10);
    o.settings.min_backoff = absl::Seconds(2);
    o.max_batches_per_subscriber = max_batches;
    return o;
  }

  FakeClock clock_{absl::FromUnixSeconds(1000)};
  FixedJitter jitter_{1.0};
};

TEST_F(GroupFeedTest, SendsInCommitOrderWithinTheBatchBounds) {
  GroupFeed feed(Row("0-1-10"),
                 Opts(/*batch_size=*/2,
                      /*max_batches_per_subscriber=*/1),
                 &clock_, &jitter_);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges(
      {Insert("9", "0-1-10"), Insert("1", "0-1-11"), Insert("2", "0-1-11")});
  feed.OnRowChanges({Insert("3", "0-1-12"), Update("1", "0-1-13")});
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0"));
  EXPECT_EQ(sub->batch(0)[0].row->values, "1");
  feed.OnSendDone(sub.get());
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:3/0"));

  EXPECT_EQ(feed.Ack({"2", "3"}).settled, 2);
  EXPECT_EQ(feed.floor(), "0-1-10");
  EXPECT_EQ(feed.FloorToWrite(), std::nullopt);
  EXPECT_EQ(feed.Ack({"1"}).settled, 1);
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

TEST_F(GroupFeedTest, FailedBatchesAndLeavingSubscribersGiveMessagesBack) {
  GroupFeed feed(Row(""), Opts(10, 2), &clock_, &jitter_);
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

TEST_F(GroupFeedTest, MaxUnackedCutsBatches) {
  GroupFeed feed(Row(""), Opts(10, 2), &clock_, &jitter_);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, /*max_unacked=*/2).ok());
  feed.OnRowChanges(
      {Insert("1", "0-1-1"), Insert("2", "0-1-1"), Insert("3", "0-1-1")});
  feed.OnSendDone(sub.get());
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0"));
  // An ack makes room.
  EXPECT_EQ(feed.Ack({"1"}).settled, 1);
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:3/0"));
}

TEST_F(GroupFeedTest, RowsWithoutAnImageAreCountedNotSent) {
  GroupFeed feed(Row(""), Opts(10, 2), &clock_, &jitter_);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges({Insert("1", "0-1-1", /*image=*/false)});
  EXPECT_THAT(sub->sent(), ElementsAre());
  EXPECT_EQ(feed.stats().no_image, 1);
}

TEST_F(GroupFeedTest, CloseEndsTheStreams) {
  GroupFeed feed(Row(""), Opts(10, 2), &clock_, &jitter_);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.Close(absl::UnavailableError("server shutting down"));
  EXPECT_EQ(sub->closed(), absl::UnavailableError("server shutting down"));
  EXPECT_EQ(feed.Subscribe(sub, 0).code(),
            absl::StatusCode::kFailedPrecondition);
}

// Ack wait 10 s, backoff 2 s doubling (jitter 1), 3 attempts: resent at
// send + 12 s, + 14 s after the next, dead at the third timeout.
GroupFeed::Options RetryOpts() {
  GroupFeed::Options o;
  o.settings.batch_size = 10;
  o.settings.ack_wait = absl::Seconds(10);
  o.settings.min_backoff = absl::Seconds(2);
  o.settings.max_attempts = 3;
  o.max_batches_per_subscriber = 100;
  return o;
}

int64_t Ns(absl::Time t) { return absl::ToUnixNanos(t); }

TEST_F(GroupFeedTest, UnackedMessagesAreResentAfterTheAckWaitThenDie) {
  GroupFeed feed(Row(""), RetryOpts(), &clock_, &jitter_);
  const absl::Time t0 = clock_.Now();
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges({Insert("1", "0-1-1"), Insert("2", "0-1-1")});
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0"));
  EXPECT_EQ(feed.Ack({"2"}).settled, 1);

  clock_.Advance(absl::Seconds(10) - absl::Nanoseconds(1));
  feed.Tick();
  EXPECT_FALSE(feed.HasWork());
  clock_.Advance(absl::Nanoseconds(1));
  feed.Tick();  // timed out: retried at send + 10 s + 2 s
  EXPECT_TRUE(feed.HasWork());
  EXPECT_TRUE(feed.RequestFlush(nullptr));
  EXPECT_FALSE(feed.RequestFlush(nullptr));  // one queued at most
  GroupFeed::Flush flush = feed.TakeFlush();
  EXPECT_THAT(flush.upserts,
              ElementsAre(GroupExceptionRow{"1", 1, Ns(t0 + absl::Seconds(12)),
                                            std::nullopt, ""}));
  EXPECT_TRUE(flush.deletes.empty());
  feed.ExceptionsWritten(flush, absl::OkStatus());
  EXPECT_EQ(feed.stats().timed_out, 1);
  EXPECT_EQ(feed.stats().waiting, 1u);

  clock_.Advance(absl::Seconds(2) - absl::Nanoseconds(1));
  feed.Tick();
  EXPECT_EQ(sub->sent().size(), 1u);
  clock_.Advance(absl::Nanoseconds(1));
  feed.Tick();
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:1/1"));

  // The second send times out at t0 + 22 s, retried 4 s later.
  clock_.Advance(absl::Seconds(10));
  feed.Tick();
  flush = feed.TakeFlush();
  EXPECT_THAT(flush.upserts,
              ElementsAre(GroupExceptionRow{"1", 2, Ns(t0 + absl::Seconds(26)),
                                            std::nullopt, ""}));
  feed.ExceptionsWritten(flush, absl::OkStatus());
  clock_.Advance(absl::Seconds(4));
  feed.Tick();
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:1/1", "2:1/2"));

  // The third: dead for the group (msgq_max_attempts=3).
  clock_.Advance(absl::Seconds(10));
  feed.Tick();
  flush = feed.TakeFlush();
  EXPECT_THAT(flush.upserts,
              ElementsAre(GroupExceptionRow{
                  "1", 3, std::nullopt, Ns(t0 + absl::Seconds(36)),
                  "not acked after 3 sends (msgq_max_attempts=3)"}));
  feed.ExceptionsWritten(flush, absl::OkStatus());
  GroupFeed::Stats stats = feed.stats();
  EXPECT_EQ(stats.died, 1);
  EXPECT_EQ(stats.dead, 1u);
  EXPECT_EQ(stats.waiting, 0u);
  // A dead message is not acked; redriven, it is read by id and sent anew.
  EXPECT_EQ(feed.Ack({"1"}).settled, 0);
  EXPECT_EQ(feed.Redrive({"1"}, false), 1);
  EXPECT_EQ(feed.Redrive({"1"}, false), 0);
  flush = feed.TakeFlush();
  EXPECT_THAT(flush.upserts,
              ElementsAre(GroupExceptionRow{"1", 0, Ns(t0 + absl::Seconds(36)),
                                            std::nullopt, ""}));
  EXPECT_THAT(flush.fetch, ElementsAre("1"));
  feed.ExceptionsWritten(flush, absl::OkStatus());
  Message m;
  m.id = "1";
  feed.Fetched(flush.fetch, std::vector<Message>{m});
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0", "1:1/1", "2:1/2", "3:1/0"));
  // Its ack deletes the row.
  GroupFeed::AckResult acked = feed.Ack({"1"});
  EXPECT_EQ(acked.settled, 1);
  EXPECT_TRUE(acked.write);
  flush = feed.TakeFlush();
  EXPECT_TRUE(flush.upserts.empty());
  EXPECT_THAT(flush.deletes, ElementsAre("1"));
}

TEST_F(GroupFeedTest, NacksRetryAfterTheDelayOrBackoffOrDie) {
  GroupFeed feed(Row(""), RetryOpts(), &clock_, &jitter_);
  const absl::Time t0 = clock_.Now();
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges(
      {Insert("1", "0-1-1"), Insert("2", "0-1-1"), Insert("3", "0-1-1")});
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0,3/0"));

  // A stale epoch counts 0; a negative delay is refused.
  EXPECT_EQ(feed.Nack({{"1", 1}}, absl::Seconds(5), "", false)->retried, 0);
  EXPECT_EQ(feed.Nack({{"1", 0}}, absl::Seconds(-1), "", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<NackCount> n =
      feed.Nack({{"1", 0}}, absl::Seconds(5), "boom", false);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->retried, 1);
  EXPECT_EQ(n->dead, 0);
  n = feed.Nack({{"2", 0}}, std::nullopt, "", false);  // backoff: 2 s
  EXPECT_EQ(n->retried, 1);
  n = feed.Nack({{"3", 0}, {"9", 0}}, std::nullopt, "never", true);
  EXPECT_EQ(n->dead, 1);
  GroupFeed::Flush flush = feed.TakeFlush();
  std::sort(flush.upserts.begin(), flush.upserts.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  EXPECT_THAT(
      flush.upserts,
      ElementsAre(GroupExceptionRow{"1", 1, Ns(t0 + absl::Seconds(5)),
                                    std::nullopt, "boom"},
                  GroupExceptionRow{"2", 1, Ns(t0 + absl::Seconds(2)),
                                    std::nullopt, ""},
                  GroupExceptionRow{"3", 1, std::nullopt, Ns(t0), "never"}));
  feed.ExceptionsWritten(flush, absl::OkStatus());

  clock_.Advance(absl::Seconds(2));
  feed.Tick();
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0,3/0", "1:2/1"));
  clock_.Advance(absl::Seconds(3));
  feed.Tick();
  EXPECT_THAT(sub->sent(), ElementsAre("0:1/0,2/0,3/0", "1:2/1", "2:1/1"));
  EXPECT_EQ(feed.stats().nacked, 2);
  EXPECT_EQ(feed.stats().dead, 1u);
}

TEST_F(GroupFeedTest, TheFloorPassesAnExceptionOnlyOnceItsRowIsWritten) {
  GroupFeed feed(Row("0-1-10"), RetryOpts(), &clock_, &jitter_);
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  feed.OnRowChanges({Insert("1", "0-1-11")});
  feed.OnRowChanges({Insert("2", "0-1-12")});
  feed.OnRowChanges({Update("2", "0-1-13")});
  GroupFeed::AckResult acked = feed.Ack({"2"});
  EXPECT_FALSE(acked.write);  // the floor waits for 1: nothing to write
  ASSERT_EQ(feed.Nack({{"1", 0}}, absl::Seconds(60), "", false)->retried, 1);
  EXPECT_EQ(feed.floor(), "0-1-10");

  // A write that fails leaves the floor where it was; the row is written
  // by the next flush, after the retry pause.
  GroupFeed::Flush flush = feed.TakeFlush();
  ASSERT_EQ(flush.upserts.size(), 1u);
  feed.ExceptionsWritten(flush, absl::UnavailableError("down"));
  EXPECT_EQ(feed.floor(), "0-1-10");
  EXPECT_FALSE(feed.HasWork());
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(feed.HasWork());
  flush = feed.TakeFlush();
  ASSERT_EQ(flush.upserts.size(), 1u);
  EXPECT_EQ(flush.upserts[0].id, "1");
  feed.ExceptionsWritten(flush, absl::OkStatus());
  EXPECT_EQ(feed.floor(), "0-1-12");
  EXPECT_EQ(feed.FloorToWrite(), "0-1-12");
}

TEST_F(GroupFeedTest, FlushWaitersAreAnsweredByTheFlushThatTookThem) {
  GroupFeed feed(Row(""), RetryOpts(), &clock_, &jitter_);
  int answered = 0;
  auto waiter = [&answered](absl::Status s) {
    EXPECT_TRUE(s.ok());
    ++answered;
  };
  EXPECT_TRUE(feed.RequestFlush(waiter));
  EXPECT_FALSE(feed.RequestFlush(waiter));
  GroupFeed::Flush flush = feed.TakeFlush();
  EXPECT_EQ(flush.waiters.size(), 2u);
  // A request after the flush started queues the next one.
  EXPECT_TRUE(feed.RequestFlush(waiter));
  for (auto& w : flush.waiters) w(absl::OkStatus());
  EXPECT_EQ(answered, 2);
  EXPECT_EQ(feed.TakeFlush().waiters.size(), 1u);
}

TEST_F(GroupFeedTest, LoadedExceptionsAreReadByIdOrTakenFromTheBinlog) {
  GroupFeed feed(Row("0-1-10"), RetryOpts(), &clock_, &jitter_);
  const int64_t now = clock_.NowNanos();
  feed.LoadExceptions({{"5", 1, now, std::nullopt, ""},
                       {"6", 2, now, std::nullopt, ""},
                       {"7", 3, std::nullopt, now - 1, "x"},
                       {"8", 1, now + kSecond, std::nullopt, ""}});
  auto sub = std::make_shared<RecordingSubscriber>();
  ASSERT_TRUE(feed.Subscribe(sub, 0).ok());
  // 6's insert is read again from the binlog: its image is the payload.
  feed.OnRowChanges({Insert("6", "0-1-11")});
  EXPECT_THAT(sub->sent(), ElementsAre("0:6/2"));
  feed.Tick();
  GroupFeed::Flush flush = feed.TakeFlush();
  EXPECT_THAT(flush.fetch, ElementsAre("5"));
  // 5 left the table: settled for the group, its row deleted.
  feed.Fetched(flush.fetch, std::vector<Message>{});
  EXPECT_EQ(feed.stats().gone, 1);
  flush = feed.TakeFlush();
  EXPECT_THAT(flush.deletes, ElementsAre("5"));
  EXPECT_EQ(feed.stats().dead, 1u);
  EXPECT_EQ(feed.stats().waiting, 1u);
}

}  // namespace
}  // namespace msgq
