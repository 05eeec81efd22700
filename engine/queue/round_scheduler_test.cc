#include "engine/queue/round_scheduler.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kSecondNs = 1'000'000'000;

class RoundSchedulerTest : public ::testing::Test {
 protected:
  RoundSchedulerTest() : s_(Opts(), mono_) {}
  static RoundScheduler::Options Opts() {
    RoundScheduler::Options o;
    o.poll_interval = absl::Seconds(30);
    o.retry_jitter = 0;
    return o;
  }
  RoundScheduler::View Subscribed() {
    RoundScheduler::View v;
    v.subscribers = true;
    return v;
  }
  // Takes the start-up purge and the first poll.
  void Settle() {
    s_.RequestPoll();
    RoundScheduler::Round r = s_.Take(Subscribed(), mono_, wall_);
    ASSERT_TRUE(r.poll);
    ASSERT_TRUE(r.purge);
    s_.PollDone(r, false, {});
  }

  absl::Time mono_ = absl::FromUnixSeconds(1000);
  int64_t wall_ = 1'700'000'000 * kSecondNs;
  RoundScheduler s_;
};

TEST_F(RoundSchedulerTest, IntervalRunsOnTheMonotonicClock) {
  Settle();
  EXPECT_FALSE(s_.HaveWork(Subscribed(), mono_, wall_));
  // NTP steps the wall clock back an hour: the poll still comes 30 s later.
  wall_ -= 3600 * kSecondNs;
  EXPECT_EQ(s_.NextDeadline(Subscribed(), mono_, wall_),
            mono_ + absl::Seconds(30));
  mono_ += absl::Seconds(30);
  EXPECT_TRUE(s_.HaveWork(Subscribed(), mono_, wall_));
  EXPECT_TRUE(s_.Take(Subscribed(), mono_, wall_).poll);
}

TEST_F(RoundSchedulerTest, HeldBackWritesAreRetriedAtTheirTimeOwnerOrNot) {
  Settle();
  for (const bool owner : {true, false}) {
    SCOPED_TRACE(owner);
    RoundScheduler::View v = Subscribed();
    v.owner = owner;
    v.locked_retry_at = mono_ + absl::Milliseconds(250);
    EXPECT_FALSE(s_.HaveWork(v, mono_, wall_));
    EXPECT_EQ(s_.NextDeadline(v, mono_, wall_),
              mono_ + absl::Milliseconds(250));
    EXPECT_TRUE(s_.HaveWork(v, mono_ + absl::Milliseconds(250), wall_));
  }
}

TEST_F(RoundSchedulerTest, RetryDelayRunsOnTheMonotonicClock) {
  Settle();
  EXPECT_TRUE(s_.MysqlFailed(mono_));
  wall_ -= 3600 * kSecondNs;
  EXPECT_TRUE(s_.Waiting(mono_ + absl::Milliseconds(99)));
  EXPECT_FALSE(s_.Waiting(mono_ + absl::Milliseconds(100)));
  EXPECT_FALSE(s_.MysqlFailed(mono_));  // was down already: doubles
  EXPECT_TRUE(s_.Waiting(mono_ + absl::Milliseconds(199)));
  EXPECT_TRUE(s_.MysqlOk());
  EXPECT_FALSE(s_.Waiting(mono_));
}

TEST_F(RoundSchedulerTest, RetryDelaysAreJitteredWithinBounds) {
  RoundScheduler::Options o = Opts();
  o.retry_jitter = 0.2;
  std::set<int64_t> firsts;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    o.seed = seed;
    RoundScheduler s(o, mono_);
    ASSERT_TRUE(s.MysqlFailed(mono_));
    // The first delay is 100 ms +- 20%: find when waiting ends, to 1 ms.
    int64_t ms = 0;
    while (s.Waiting(mono_ + absl::Milliseconds(ms))) ++ms;
    EXPECT_GE(ms, 80);
    EXPECT_LE(ms, 121);
    firsts.insert(ms);
  }
  EXPECT_GT(firsts.size(), 3u);  // tables do not all retry at once
}

TEST_F(RoundSchedulerTest, DueTimeBecomesAMonotonicDeadline) {
  Settle();
  s_.NoteDueAt(wall_ + 2 * kSecondNs);
  EXPECT_EQ(s_.NextDeadline(Subscribed(), mono_, wall_),
            mono_ + absl::Seconds(2));
  EXPECT_TRUE(s_.HaveWork(Subscribed(), mono_, wall_ + 2 * kSecondNs));
}

// With readings of MySQL's clock, a due time the estimate reached polls
// only once a reading at or after it, from a query sent after it was
// noted, confirms it; until then it gives no deadline (the reading's
// arrival wakes the manager) and asks for a reading.
TEST_F(RoundSchedulerTest, ADueTimeReachedPollsOnlyOnceAReadingConfirmsIt) {
  Settle();
  const int64_t due = wall_ + 2 * kSecondNs;
  const absl::Time noted = mono_ + absl::Milliseconds(10);
  s_.NoteDueAt(due, noted);
  RoundScheduler::View v = Subscribed();
  v.reading_ns = wall_;  // the last reading: before the due time
  v.reading_sent = mono_;
  // Not reached by the estimate: a deadline, no reading asked for.
  EXPECT_FALSE(s_.NeedsReading(v, wall_));
  EXPECT_EQ(s_.NextDeadline(v, mono_, wall_), mono_ + absl::Seconds(2));
  // Reached by the estimate: no poll, a reading, and only the purge's and
  // the poll interval's deadlines.
  const absl::Time mono = mono_ + absl::Seconds(2);
  EXPECT_FALSE(s_.HaveWork(v, mono, due));
  EXPECT_TRUE(s_.NeedsReading(v, due));
  EXPECT_EQ(s_.NextDeadline(v, mono, due), mono_ + absl::Seconds(30));
  // A reading at the due time, but from a query sent before it was noted
  // (it may predate a step back of MySQL's clock): still not confirmed.
  v.reading_ns = due;
  v.reading_sent = noted - absl::Nanoseconds(1);
  EXPECT_FALSE(s_.HaveWork(v, mono, due));
  EXPECT_TRUE(s_.NeedsReading(v, due));
  // One sent after, but 1 ns short of the due time: not confirmed.
  v.reading_ns = due - 1;
  v.reading_sent = noted;
  EXPECT_FALSE(s_.HaveWork(v, mono, due));
  // Confirmed: the poll runs and the due time is taken.
  v.reading_ns = due;
  EXPECT_FALSE(s_.NeedsReading(v, due));
  EXPECT_TRUE(s_.HaveWork(v, mono, due));
  EXPECT_EQ(s_.NextDeadline(v, mono, due), mono);
  const RoundScheduler::Round r = s_.Take(v, mono, due);
  EXPECT_TRUE(r.poll);
  EXPECT_EQ(s_.next_due_ns(), std::nullopt);
  s_.PollDone(r, false, {});
  // The poll found the row not due yet (MySQL's clock is behind the
  // estimate) and notes it again: the reading before that confirms nothing,
  // so the rounds do not poll again and again.
  const absl::Time again = mono + absl::Milliseconds(1);
  s_.NoteDueAt(due, again);
  EXPECT_FALSE(s_.HaveWork(v, again, due + kSecondNs));
  EXPECT_TRUE(s_.NeedsReading(v, due + kSecondNs));
  v.reading_sent = again;
  EXPECT_TRUE(s_.HaveWork(v, again, due + kSecondNs));
  // An earlier due time takes its own noting time; a later one keeps it.
  s_.NoteDueAt(due + kSecondNs, again + absl::Seconds(1));
  EXPECT_TRUE(s_.HaveWork(v, again, due + kSecondNs));
  s_.NoteDueAt(due - kSecondNs, again + absl::Seconds(1));
  EXPECT_FALSE(s_.HaveWork(v, again, due + kSecondNs));
  // Without subscribers nothing polls, and no reading is asked for.
  EXPECT_FALSE(s_.NeedsReading(RoundScheduler::View(), due + kSecondNs));
}

TEST_F(RoundSchedulerTest, PollKeepsNamedIdsItDidNotReturn) {
  Settle();
  ASSERT_TRUE(s_.NameForFetch("7"));
  ASSERT_TRUE(s_.NameForFetch("8"));
  s_.RequestPoll();
  RoundScheduler::Round r = s_.Take(Subscribed(), mono_, wall_);
  ASSERT_TRUE(r.poll);
  EXPECT_THAT(r.fetch_ids, IsEmpty());
  // The poll saw 7; 8 was not visible to it yet.
  s_.PollDone(r, false, {"7"});
  EXPECT_TRUE(s_.HaveWork(Subscribed(), mono_, wall_));
  r = s_.Take(Subscribed(), mono_, wall_);
  EXPECT_FALSE(r.poll);
  EXPECT_THAT(r.fetch_ids, ElementsAre("8"));
}

TEST_F(RoundSchedulerTest, FetchRetriesThenRequestsOnePoll) {
  Settle();
  s_.NameForFetch("7");
  std::vector<absl::Duration> waits;
  for (int read = 0; read < 5; ++read) {
    RoundScheduler::Round r = s_.Take(Subscribed(), mono_, wall_);
    ASSERT_THAT(r.fetch_ids, ElementsAre("7")) << read;
    s_.FetchDone(r.fetch_ids, {}, mono_);
    ASSERT_FALSE(s_.HaveWork(Subscribed(), mono_, wall_));
    const absl::Time next = s_.NextDeadline(Subscribed(), mono_, wall_);
    waits.push_back(next - mono_);
    mono_ = next;
  }
  EXPECT_THAT(waits, ElementsAre(absl::Milliseconds(5), absl::Milliseconds(10),
                                 absl::Milliseconds(20), absl::Milliseconds(40),
                                 absl::Milliseconds(80)));
  RoundScheduler::Round r = s_.Take(Subscribed(), mono_, wall_);
  ASSERT_THAT(r.fetch_ids, ElementsAre("7"));
  s_.FetchDone(r.fetch_ids, {}, mono_);
  EXPECT_TRUE(s_.HaveWork(Subscribed(), mono_, wall_));
  r = s_.Take(Subscribed(), mono_, wall_);
  EXPECT_TRUE(r.poll);  // given up on 7: one poll covers it
  EXPECT_THAT(r.fetch_ids, IsEmpty());
}

TEST_F(RoundSchedulerTest, BacklogSeenDuringAPollSurvivesItsResult) {
  Settle();
  s_.RequestPoll();
  RoundScheduler::Round r = s_.Take(Subscribed(), mono_, wall_);
  ASSERT_TRUE(r.poll);
  s_.NoteBacklog();  // the binlog named rows the full cache refused
  s_.PollDone(r, /*hit_limit=*/false, {});
  EXPECT_TRUE(s_.backlog());
  s_.CacheLevel(5, 10);
  EXPECT_TRUE(s_.Take(Subscribed(), mono_, wall_).poll);
}

TEST_F(RoundSchedulerTest, BacklogPollsWhenTheCacheDrainsToHalf) {
  Settle();
  s_.RequestPoll();
  RoundScheduler::Round r = s_.Take(Subscribed(), mono_, wall_);
  s_.PollDone(r, /*hit_limit=*/true, {});
  s_.CacheLevel(6, 10);
  EXPECT_FALSE(s_.HaveWork(Subscribed(), mono_, wall_));
  s_.CacheLevel(5, 10);
  EXPECT_TRUE(s_.HaveWork(Subscribed(), mono_, wall_));
  r = s_.Take(Subscribed(), mono_, wall_);
  s_.PollDone(r, /*hit_limit=*/false, {});
  EXPECT_FALSE(s_.backlog());
}

TEST_F(RoundSchedulerTest, NothingIsReadWithoutSubscribersOrWithAFullCache) {
  Settle();
  s_.RequestPoll();
  s_.NameForFetch("1");
  RoundScheduler::View none;
  EXPECT_FALSE(s_.HaveWork(none, mono_, wall_));
  RoundScheduler::View full = Subscribed();
  full.cache_full = true;
  EXPECT_FALSE(s_.HaveWork(full, mono_, wall_));
  full.writes_pending = true;
  EXPECT_TRUE(s_.HaveWork(full, mono_, wall_));
  RoundScheduler::Round r = s_.Take(full, mono_, wall_);
  EXPECT_FALSE(r.poll);
  EXPECT_THAT(r.fetch_ids, IsEmpty());
}

TEST_F(RoundSchedulerTest, TooManyNamedIdsBecomeABacklog) {
  RoundScheduler::Options o = Opts();
  o.max_fetch_ids = 2;
  RoundScheduler s(o, mono_);
  EXPECT_TRUE(s.NameForFetch("1"));
  EXPECT_TRUE(s.NameForFetch("2"));
  EXPECT_TRUE(s.NameForFetch("2"));
  EXPECT_FALSE(s.backlog());
  EXPECT_FALSE(s.NameForFetch("3"));
  EXPECT_TRUE(s.backlog());
}

}  // namespace
}  // namespace msgq

namespace msgq {
namespace {

TEST(RoundSchedulerOwnerTest, WithoutOwnershipOnlyWritesAreDue) {
  const absl::Time mono = absl::FromUnixSeconds(1000);
  const int64_t wall = int64_t{1'700'000'000} * 1'000'000'000;
  RoundScheduler s(RoundScheduler::Options(), mono);
  RoundScheduler::View standby;
  standby.subscribers = true;
  standby.owner = false;
  s.RequestPoll();
  s.NoteDueAt(wall - 1);
  EXPECT_TRUE(s.NameForFetch("7"));
  // Due poll, fetch and start-up purge, but not the owner: nothing to do,
  // and no deadline to wake up for.
  EXPECT_FALSE(s.HaveWork(standby, mono, wall));
  EXPECT_EQ(s.NextDeadline(standby, mono, wall), absl::InfiniteFuture());
  const RoundScheduler::Round none = s.Take(standby, mono, wall);
  EXPECT_FALSE(none.poll);
  EXPECT_FALSE(none.purge);
  EXPECT_TRUE(none.fetch_ids.empty());
  standby.writes_pending = true;
  EXPECT_TRUE(s.HaveWork(standby, mono, wall));
  // Ownership granted: the requested poll and the purge run.
  RoundScheduler::View owner = standby;
  owner.owner = true;
  const RoundScheduler::Round r = s.Take(owner, mono, wall);
  EXPECT_TRUE(r.poll);
  EXPECT_TRUE(r.purge);
}

TEST_F(RoundSchedulerTest, WakeAtRunsOnePumpRoundAtThatTime) {
  ASSERT_NO_FATAL_FAILURE(Settle());
  RoundScheduler::View full = Subscribed();
  full.cache_full = true;  // nothing else to do but purge in 30 s
  const absl::Time token = mono_ + absl::Milliseconds(100);
  s_.WakeAt(token);
  s_.WakeAt(mono_ + absl::Seconds(1));  // a later one does not win
  EXPECT_FALSE(s_.HaveWork(full, mono_, wall_));
  EXPECT_EQ(s_.NextDeadline(full, mono_, wall_), token);
  EXPECT_TRUE(s_.HaveWork(full, token, wall_));
  RoundScheduler::Round r = s_.Take(full, token, wall_);
  EXPECT_TRUE(r.pump);
  EXPECT_FALSE(r.poll);
  // Once: no busy loop afterwards.
  EXPECT_FALSE(s_.HaveWork(full, token, wall_));
  EXPECT_EQ(s_.NextDeadline(full, token, wall_), mono_ + absl::Seconds(30));
}

}  // namespace
}  // namespace msgq

namespace msgq {
namespace {

// Owed postpones in their grace: a round when the oldest one's grace runs
// out, not before (and not a busy loop meanwhile).
TEST_F(RoundSchedulerTest, PostponesInTheirGraceWakeARoundWhenItRunsOut) {
  Settle();
  RoundScheduler::View view = Subscribed();
  view.postpones_due_at = mono_ + absl::Milliseconds(50);
  EXPECT_FALSE(s_.HaveWork(view, mono_, wall_));
  EXPECT_EQ(s_.NextDeadline(view, mono_, wall_),
            mono_ + absl::Milliseconds(50));
  mono_ += absl::Milliseconds(50);
  EXPECT_TRUE(s_.HaveWork(view, mono_, wall_));
  // Not the owner: its deadline still comes (the postpones of its sends).
  view.owner = false;
  view.postpones_due_at = mono_ + absl::Milliseconds(7);
  EXPECT_EQ(s_.NextDeadline(view, mono_, wall_), mono_ + absl::Milliseconds(7));
}

}  // namespace
}  // namespace msgq
