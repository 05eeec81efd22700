// MessageManager with Options::binlog_row_images: a due row the binlog
// shows with its image is queued and sent at once, with no read; and when
// the image is not used because it may be older than what msgq already did
// with the row (a read at or after its position, a new manager or owner
// before its first read), or waits for the read running.
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class ImageTest : public MessageManagerTest {
 protected:
  void SetUp() override {
    MessageManager::Options options;
    options.binlog_row_images = true;
    options.leased = leased_;
    ASSERT_NO_FATAL_FAILURE(
        Init({.batch_size = 10, .ack_wait_s = 30}, options));
  }

  // A due row's change with its image: id, then `payload`; at `at`, by
  // default just after every commit the store has (no read has it yet).
  RowChange Image(const std::string& id, const std::string& payload,
                  std::optional<BinlogPosition> at = std::nullopt) {
    RowChange c;
    c.id = id;
    c.time_next = Now() - kSecond;
    c.event_time = Now() / 1'000'000'000;
    c.position = at.value_or(Next());
    auto row = std::make_shared<PackedRow>();
    row->lengths = {static_cast<int64_t>(id.size()),
                    static_cast<int64_t>(payload.size())};
    row->values = id + payload;
    c.row = std::move(row);
    return c;
  }

  // The position of the store's next commit.
  BinlogPosition Next() const {
    BinlogPosition at = store_->position();
    ++at.offset;
    return at;
  }

  static std::string Payload(const Message& m) {
    return m.row->values.substr(static_cast<size_t>(m.row->lengths[0]));
  }

  bool leased_ = false;
};

TEST_F(ImageTest, ADueRowIsSentFromItsImageWithNoRead) {
  auto sub = Subscribe();
  RunOnce();                  // the subscribe poll: nothing yet
  Advance(absl::Seconds(6));  // past a new manager's wait
  PutDue({"5"});
  manager_->OnRowChanges({Image("5", "hello", store_->position())});
  // Sent before any round ran.
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  EXPECT_EQ(Payload(sub->batches[0][0]), "hello");
  EXPECT_EQ(stats().image_rows, 1);
  Complete(*sub);
  // Its postpone waits for the round after the next one to start (as a
  // send during a round's read does), then is written; no read of it.
  RunOnce();
  EXPECT_EQ(stats().postponed, 0);
  RunOnce();
  EXPECT_EQ(stats().postponed, 1);
  EXPECT_EQ(stats().fetches, 0);
  EXPECT_EQ(stats().commit_to_send.count, 1);
}

// An ack that arrives within that round cancels the postpone: one row
// update per message.
TEST_F(ImageTest, AnAckWithinARoundCancelsThePostpone) {
  auto sub = Subscribe();
  RunOnce();
  Advance(absl::Seconds(6));  // past a new manager's wait
  PutDue({"5"});
  manager_->OnRowChanges({Image("5", "hello", store_->position())});
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  Complete(*sub);
  RunOnce();
  auto acked = Ack({"5"});
  RunOnce();
  ASSERT_EQ(acked->calls, 1);
  ASSERT_TRUE(acked->result.ok()) << acked->result.status();
  EXPECT_EQ(*acked->result, 1);
  RunOnce();
  EXPECT_EQ(stats().postponed, 0);
  EXPECT_EQ(stats().acked, 1);
}

// Images go out at once up to one batch per millisecond (bursts of 20 ms'
// worth); more wait for the next slot and go together.
TEST_F(ImageTest, ManyImagesAtOnceGoTogetherPastTheBurst) {
  auto sub = Subscribe();
  RunOnce();
  Advance(absl::Seconds(6));  // past a new manager's wait
  for (int i = 1; i <= 30; ++i) {
    manager_->OnRowChanges({Image(absl::StrCat(i), "x")});
    Complete(*sub);
  }
  EXPECT_EQ(sub->batches.size(), 21u);
  Advance(absl::Milliseconds(1));
  RunOnce();
  ASSERT_EQ(sub->batches.size(), 22u);
  EXPECT_EQ(sub->batches[21].size(), 9u);
  EXPECT_EQ(stats().image_rows, 30);
}

// With 64 messages sent and not settled the subscribers are busy: images
// wait 5 ms to gather a larger batch.
TEST_F(ImageTest, WithManyMessagesUnsettledImagesWaitToGather) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 100, .ack_wait_s = 30}, [] {
    MessageManager::Options o;
    o.binlog_row_images = true;
    o.image_wait = absl::ZeroDuration();
    return o;
  }()));
  auto sub = Subscribe();
  PutDue(Range(1, 64));
  RunOnce();  // the subscribe poll sends 64
  ASSERT_EQ(sub->ids().size(), 64u);
  Complete(*sub);
  manager_->OnRowChanges({Image("100", "x"), Image("101", "y")});
  EXPECT_EQ(sub->ids().size(), 64u);
  Advance(absl::Milliseconds(5));
  RunOnce();
  EXPECT_THAT(sub->batch_ids().back(), ElementsAre("100", "101"));
}

// One transaction inserted the row and then changed it: the last image is
// the one sent, once.
TEST_F(ImageTest, ARowChangedTwiceInOneCallIsSentAsLeft) {
  auto sub = Subscribe();
  RunOnce();
  Advance(absl::Seconds(6));
  manager_->OnRowChanges({Image("5", "first"), Image("5", "second")});
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  EXPECT_EQ(Payload(sub->batches[0][0]), "second");
  EXPECT_EQ(stats().image_rows, 2);
}

// A new manager does not know what the one before it sent: until its
// first read ends, it reads the row instead.
TEST_F(ImageTest, ANewManagerReadsTheRowUntilItsFirstRead) {
  auto sub = Subscribe();
  PutDue({"5"});
  manager_->OnRowChanges({Image("5", "hello", store_->position())});
  EXPECT_THAT(sub->ids(), IsEmpty());
  RunOnce();  // the subscribe poll reads it
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  EXPECT_EQ(stats().image_rows, 0);
  // After that read's position, images are used.
  manager_->OnRowChanges({Image("6", "later")});
  EXPECT_THAT(sub->ids(), ElementsAre("5", "6"));
  EXPECT_EQ(stats().image_rows, 1);
}

// The first manager of a table in its process (Options::image_wait 0) uses
// images at once.
TEST_F(MessageManagerTest, WithoutAWaitImagesAreUsedAtOnce) {
  MessageManager::Options options;
  options.binlog_row_images = true;
  options.image_wait = absl::ZeroDuration();
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10}, options));
  auto sub = Subscribe();
  RunOnce();
  RowChange c;
  c.id = "5";
  c.time_next = Now() - kSecond;
  c.event_time = Now() / 1'000'000'000;
  c.position = {"binlog.000001", 1};
  c.row = std::make_shared<PackedRow>(PackedRow{{1}, "5"});
  manager_->OnRowChanges({c});
  EXPECT_THAT(sub->ids(), ElementsAre("5"));
  EXPECT_EQ(stats().image_rows, 1);
}

// The key case: a poll found the row, it was sent and acked, and only then
// did the binlog reach the row's insert. Its image is older than the ack
// and must not send the row again; the fetch it gets instead finds it
// acked.
TEST_F(ImageTest, AnImageOfARowAReadReturnedIsNotUsed) {
  auto sub = Subscribe();
  Advance(absl::Seconds(6));
  PutDue({"5"});
  const BinlogPosition inserted = store_->position();
  manager_->RequestPoll();
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  Complete(*sub);
  auto acked = Ack({"5"});
  RunOnce();
  ASSERT_EQ(acked->calls, 1);
  ASSERT_TRUE(acked->result.ok()) << acked->result.status();
  ASSERT_EQ(*acked->result, 1);
  manager_->OnRowChanges({Image("5", "hello", inserted)});
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("5"));
  EXPECT_EQ(stats().image_rows, 0);
  EXPECT_EQ(stats().fetches, 1);
  EXPECT_EQ(stats().fetch_misses, 1);
}

// Images that come while a poll runs wait for its position: the one
// committed after the poll's snapshot is sent from its image; the poll
// returned the other one's row with that change in it, which is sent.
TEST_F(ImageTest, AnImageDuringAPollWaitsForThePollsPosition) {
  auto sub = Subscribe();
  RunOnce();
  PutDue({"5"});
  const BinlogPosition in_poll = store_->position();
  BinlogPosition after = in_poll;
  after.offset += 10;
  bool shown = false;
  store_->before_call = [&](FakeMessageStore::Op op) {
    if (op != FakeMessageStore::Op::kPollDue || shown) return;
    shown = true;
    manager_->OnRowChanges({Image("5", "x", in_poll), Image("6", "y", after)});
  };
  manager_->RequestPoll();
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("5", "6"));
  EXPECT_EQ(stats().image_rows, 1);
  ASSERT_EQ(sub->batches.size(), 1u);
  ASSERT_EQ(sub->batches[0].size(), 2u);
  EXPECT_EQ(Payload(sub->batches[0][1]), "y");  // the image's
  RunOnce();
  EXPECT_EQ(stats().fetches, 0);
}

// Without the option the image is ignored and the row read.
TEST_F(MessageManagerTest, WithoutRowImagesTheRowIsRead) {
  ASSERT_NO_FATAL_FAILURE(Init({.batch_size = 10}));
  auto sub = Subscribe();
  RunOnce();
  Advance(absl::Seconds(6));
  PutDue({"5"});
  RowChange c;
  c.id = "5";
  c.time_next = Now() - kSecond;
  c.event_time = Now() / 1'000'000'000;
  c.row = std::make_shared<PackedRow>(PackedRow{{1}, "5"});
  manager_->OnRowChanges({c});
  EXPECT_THAT(sub->ids(), IsEmpty());
  RunOnce();
  EXPECT_THAT(sub->ids(), ElementsAre("5"));
  EXPECT_EQ(stats().image_rows, 0);
}

class LeasedImageTest : public ImageTest {
 protected:
  LeasedImageTest() { leased_ = true; }
};

// A new owner does not know what the last owner sent: images wait again,
// for its first read after the grant.
TEST_F(LeasedImageTest, ANewOwnerReadsTheRowUntilItsFirstRead) {
  manager_->Own(clock_.MonotonicNow() + absl::Minutes(1), /*images_wait=*/true);
  auto sub = Subscribe();
  PutDue({"5"});
  manager_->OnRowChanges({Image("5", "x", store_->position())});
  EXPECT_THAT(sub->ids(), IsEmpty());
  RunOnce();
  ASSERT_THAT(sub->ids(), ElementsAre("5"));
  PutDue({"6"});
  manager_->OnRowChanges({Image("6", "y")});
  EXPECT_THAT(sub->ids(), ElementsAre("5", "6"));
  EXPECT_EQ(stats().image_rows, 1);
}

}  // namespace
}  // namespace msgq::manager_test
