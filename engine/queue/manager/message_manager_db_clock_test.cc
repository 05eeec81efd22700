// MessageManager with readings of MySQL's clock (DbReadings): its own
// clock is only an estimate of MySQL's, which a step of MySQL's clock
// makes wrong until the next measurement. Nothing is sent on the estimate
// alone: the store's reads judge due by MySQL's clock (the fake's db
// clock), a binlog image is sent only when its event's timestamp confirms
// its time_next, and a due time the estimate reached polls only after a
// reading, asked for then, confirms it.
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class ManagerDbClockTest : public MessageManagerTest {
 protected:
  // The manager cancels its reading request as it stops: it must go
  // before `readings`, which the base class's manager would outlive.
  ~ManagerDbClockTest() override { manager_.reset(); }

  void SetUp() override {
    readings_ = &readings;
    MessageManager::Options options;
    options.binlog_row_images = true;
    options.image_wait = absl::ZeroDuration();  // the table's first manager
    ASSERT_NO_FATAL_FAILURE(
        Init({.batch_size = 10, .ack_wait_s = 30}, options));
    store_->set_db_clock(&mysql);
    Measure();
  }

  // MySQL's clock now, Unix ns.
  int64_t Db() const { return mysql.NowNanos(); }
  // A measurement: a reading of MySQL's clock now, and the estimate (the
  // manager's clock) set to it, as DbClock::Observe does.
  void Measure() {
    readings.Take(Db(), clock_.MonotonicNow());
    clock_.Set(mysql.Now());
  }
  // Time passes for both clocks.
  void Pass(absl::Duration d) {
    Advance(d);
    mysql.Advance(d);
  }
  // A row inserted now on MySQL's clock, due at `time_next`, and its
  // binlog change with its image (the event's timestamp: MySQL's clock at
  // the statement's start, whole seconds).
  RowChange Insert(const std::string& id, int64_t time_next) {
    store_->PutDue(id, time_next);
    RowChange c;
    c.id = id;
    c.time_next = time_next;
    c.event_time = Db() / kSecond;
    c.inserted = true;
    c.position = store_->position();
    auto row = std::make_shared<PackedRow>();
    row->lengths = {static_cast<int64_t>(id.size()), 0};
    row->values = id;
    c.row = std::move(row);
    return c;
  }

  FakeDbReadings readings;
  FakeClock mysql{Start()};
};

// A row due by its event's own timestamp (the default time_next, 0, or one
// in a past second) is sent from its image at once: no reading, no read.
TEST_F(ManagerDbClockTest, AnImageItsEventConfirmsIsSentAtOnce) {
  auto sub = Subscribe();
  RunOnce();  // the subscribe poll: nothing
  Pass(absl::Milliseconds(300));
  manager_->OnRowChanges({Insert("1", 0)});
  manager_->OnRowChanges({Insert("2", (Db() / kSecond) * kSecond)});
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2"));
  EXPECT_EQ(stats().image_rows, 2);
  EXPECT_EQ(stats().due_unconfirmed, 0);
  EXPECT_EQ(readings.requests, 0);
  EXPECT_EQ(store_->poll_calls(), 1);
}

// A row due by the estimate but after its event's timestamp (here 1 ns
// into the event's second): a poll reads it once a reading asked for then
// confirms it; one reading for all the rows waiting.
TEST_F(ManagerDbClockTest, AnImageDueAfterItsEventWaitsForOneReadingThenAPoll) {
  auto sub = Subscribe();
  RunOnce();
  Pass(absl::Milliseconds(300));
  const int64_t second = (Db() / kSecond) * kSecond;
  manager_->OnRowChanges({Insert("1", second + 1), Insert("2", Db())});
  EXPECT_THAT(sub->ids(), IsEmpty());
  EXPECT_EQ(stats().due_unconfirmed, 2);
  EXPECT_EQ(stats().image_rows, 0);
  RunOnce();  // no poll; one reading asked for
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(readings.requests, 1);
  EXPECT_EQ(readings.waiting.size(), 1u);
  Pass(absl::Microseconds(200));  // the measurement's round trip
  Measure();
  EXPECT_TRUE(readings.waiting.empty());
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), ElementsAre("1", "2"));
  EXPECT_EQ(readings.requests, 1);
}

// MySQL's clock steps 30 s back; until the next measurement the estimate
// is 30 s ahead. A row inserted then, due 2 s later on MySQL's clock, is
// due by the estimate: it is not sent from its image, the reading asked
// for shows it not due (and corrects the estimate), and it goes out by a
// poll only after MySQL's clock reached its time_next and a reading said
// so. The subscribe poll and the interval polls read nothing early either.
TEST_F(ManagerDbClockTest, AStepBackOfMySqlsClockSendsNothingEarly) {
  auto sub = Subscribe();
  RunOnce();
  Pass(absl::Milliseconds(1));
  mysql.Set(mysql.Now() - absl::Seconds(30));
  const int64_t due = Db() + 2 * kSecond;
  manager_->OnRowChanges({Insert("1", due)});
  EXPECT_EQ(stats().due_unconfirmed, 1);
  manager_->RequestPoll();
  RunOnce();  // polls, by MySQL's clock: nothing due
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_THAT(sub->ids(), IsEmpty());
  EXPECT_EQ(readings.requests, 1);
  Pass(absl::Microseconds(200));
  Measure();  // 30 s back: the estimate follows
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_EQ(readings.requests, 1);  // not due by the estimate now
  Pass(absl::Seconds(2) - absl::Microseconds(201));
  RunOnce();
  EXPECT_EQ(readings.requests, 1);
  EXPECT_THAT(sub->ids(), IsEmpty());
  Pass(absl::Microseconds(1));  // due by the estimate and by MySQL's clock
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 2);
  EXPECT_EQ(readings.requests, 2);
  EXPECT_THAT(sub->ids(), IsEmpty());
  Pass(absl::Microseconds(200));
  Measure();
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 3);
  EXPECT_THAT(sub->ids(), ElementsAre("1"));
  EXPECT_EQ(sub->batches[0][0].time_next, due);
}

// The estimate is ahead of MySQL's clock (a step back not measured yet)
// when a scheduled row's due time comes: the reading asked for shows it
// not due, so no poll runs; a reading from before the due time was noted
// never confirms it, however late MySQL's clock it shows.
TEST_F(ManagerDbClockTest,
       AReadingFromBeforeTheDueTimeWasNotedConfirmsNothing) {
  auto sub = Subscribe();
  RunOnce();
  const int64_t due = Db() + kSecond;
  const absl::Time before = clock_.MonotonicNow();
  Pass(absl::Milliseconds(1));
  manager_->OnRowChanges({Insert("1", due)});
  EXPECT_EQ(stats().due_unconfirmed, 0);  // due later by the estimate too
  // A reading at the due time, from a query sent before the row was known.
  readings.Take(due, before);
  Pass(absl::Seconds(1));
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(readings.requests, 1);
  // MySQL's clock stepped back 30 s meanwhile: the reading says not due.
  mysql.Set(mysql.Now() - absl::Seconds(30));
  Measure();
  RunOnce();
  EXPECT_EQ(store_->poll_calls(), 1);
  EXPECT_EQ(readings.requests, 1);
  EXPECT_THAT(sub->ids(), IsEmpty());
}

}  // namespace
}  // namespace msgq::manager_test
