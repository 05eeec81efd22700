// Delivery across wall-clock steps of +30 s and -30 s, of msgqd's clock and,
// separately, of MariaDB's (libfaketime, tests/faketime.h), in the middle
// of a stream: a producer inserts rows due a little ahead on MariaDB's
// clock, a real gRPC subscriber acks them, and the test samples MariaDB's
// NOW(6) every few milliseconds so that each arrival is set against
// MariaDB's clock at that moment. Checked for every row:
//   - not received before its time_next as MariaDB's clock had it;
//   - received at most kLate after MariaDB's clock last reached it;
//   - received exactly once (the ack wait is longer than the test, and every
//     row is acked within about kAckEvery, so any second send is one inside
//     the ack wait, and after an OK ack);
//   - every committed row received.
// docs/reliability.md#database-faults says why msgqd's clock changes
// nothing and how a step of MariaDB's is followed: msgqd's estimate of
// MariaDB's clock (engine/db_clock.h, measured once a second) is ahead by
// the step between a step back and the next measurement, but nothing is
// sent on the estimate alone. Polls judge due by MariaDB's NOW(6) in their
// SQL; a binlog image is sent only when its event's timestamp is at or
// after its time_next; a due time the estimate reached polls only after a
// reading of MariaDB's clock asked for then confirms it
// (docs/design/due-clock.md). MariadbBack30s checks exactly that window.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/sql/mysql_connection.h"
#include "gtest/gtest.h"
#include "tests/faketime.h"
#include "tests/instances_fixture.h"
#include "tests/wait_events.h"

namespace msgq::testing {
namespace {

constexpr int kStepSeconds = 30;
// Rows are due this long after their INSERT, on MariaDB's clock: a step
// back finds rows due within the next kLead that become 30 s away.
constexpr absl::Duration kLead = absl::Seconds(2);
constexpr absl::Duration kProduceEvery = absl::Milliseconds(20);
constexpr absl::Duration kAckEvery = absl::Milliseconds(500);
// Longer than the whole test, longer than a step: a second send of a row is
// a send inside its ack wait whatever the step did to MariaDB's clock.
constexpr int kAckWaitSeconds = 90;
// msgqd measures MariaDB's clock once a second and polls once a second
// (vt_poller_interval); a row scheduled ahead is read by the poll at its
// due time, after one more reading of MariaDB's clock. After a step
// forward the estimate lags by the step until the next measurement, so a
// row may come up to a measurement plus a poll after MariaDB's clock
// reached its time_next, and some scheduling on two shared cores.
constexpr absl::Duration kLate = absl::Seconds(3);
// Rounding only: both sides read the same CLOCK_REALTIME (plus the offset),
// the sampler bounds MariaDB's clock at each arrival from both sides.
constexpr absl::Duration kEarlyTolerance = absl::Milliseconds(1);

// Reads MariaDB's NOW(6) on a connection of its own every 5 ms and keeps
// every reading with the test's clock before and after it.
class MariadbClockSampler {
 public:
  explicit MariadbClockSampler(const PrivateMariaDb& db) {
    thread_ = std::thread([this, &db] { Run(&db); });
  }
  ~MariadbClockSampler() { Stop(); }
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }

  // Bounds of MariaDB's clock at the test's time `t`, from the readings
  // just before and just after it. A step lies between at most one of the
  // two and `t` (steps are seconds apart, readings milliseconds), so the
  // reading on the other side carried on by the elapsed time bounds it.
  // nullopt when `t` is not inside the sampled span.
  std::optional<absl::Time> AtMost(absl::Time t) const {
    std::optional<std::pair<Sample, Sample>> s = Around(t);
    if (!s) return std::nullopt;
    return std::max(s->first.db + (t - s->first.sent), s->second.db);
  }
  std::optional<absl::Time> AtLeast(absl::Time t) const {
    std::optional<std::pair<Sample, Sample>> s = Around(t);
    if (!s) return std::nullopt;
    return std::min(s->first.db, s->second.db - (s->second.received - t));
  }
  // The test's time by which MariaDB's clock had last reached `db_time`
  // before `t` (a step back may take it below again): the answer of the
  // reading after the last one below it. nullopt when the clock was below
  // `db_time` at the last reading before `t`.
  std::optional<absl::Time> ReachedBefore(absl::Time db_time,
                                          absl::Time t) const {
    absl::MutexLock lock(&mu_);
    auto end = std::upper_bound(
        samples_.begin(), samples_.end(), t,
        [](absl::Time v, const Sample& s) { return v < s.received; });
    if (end == samples_.begin()) return std::nullopt;
    for (auto it = end; it != samples_.begin(); --it) {
      if ((it - 1)->db < db_time) {
        if (it == end) return std::nullopt;
        return it->received;
      }
    }
    return samples_.front().received;
  }
  // MariaDB's clock minus the test's, at the last reading.
  absl::Duration Ahead() const {
    absl::MutexLock lock(&mu_);
    if (samples_.empty()) return absl::InfiniteDuration();
    const Sample& s = samples_.back();
    return s.db - s.received;
  }
  int failures() const {
    absl::MutexLock lock(&mu_);
    return failures_;
  }

 private:
  struct Sample {
    absl::Time sent, received, db;
  };
  std::optional<std::pair<Sample, Sample>> Around(absl::Time t) const {
    absl::MutexLock lock(&mu_);
    auto after = std::upper_bound(
        samples_.begin(), samples_.end(), t,
        [](absl::Time v, const Sample& s) { return v < s.sent; });
    if (after == samples_.end() || after == samples_.begin()) {
      return std::nullopt;
    }
    auto before = after - 1;
    if (before->received > t) {
      if (before == samples_.begin()) return std::nullopt;
      --before;  // readings overlap nothing: sequential on one connection
    }
    return std::make_pair(*before, *after);
  }
  void Run(const PrivateMariaDb* db) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn = db->Connect();
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      const absl::Time sent = absl::Now();
      absl::StatusOr<QueryResult> r =
          conn.ok() ? (*conn)->Query(
                          "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS "
                          "SIGNED)")
                    : absl::StatusOr<QueryResult>(conn.status());
      const absl::Time received = absl::Now();
      int64_t micros = 0;
      const bool ok = r.ok() && r->rows.size() == 1 && r->rows[0].size() == 1 &&
                      r->rows[0][0].has_value() &&
                      absl::SimpleAtoi(*r->rows[0][0], &micros);
      {
        absl::MutexLock lock(&mu_);
        if (ok) {
          samples_.push_back({sent, received, absl::FromUnixMicros(micros)});
        } else {
          ++failures_;
        }
      }
      absl::SleepFor(absl::Milliseconds(5));  // the sampling pace
    }
  }

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Sample> samples_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

// Inserts ids 1, 2, ... into msgq.`table`, each due kLead after MariaDB's
// now (read just before, as an application scheduling ahead does), and
// records each committed id's time_next.
class DueProducer {
 public:
  DueProducer(const PrivateMariaDb& db, const std::string& table) {
    thread_ = std::thread([this, &db, table] { Run(&db, table); });
  }
  ~DueProducer() { Stop(); }
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }
  std::map<std::string, absl::Time> committed() const {
    absl::MutexLock lock(&mu_);
    return committed_;
  }
  int failures() const {
    absl::MutexLock lock(&mu_);
    return failures_;
  }

 private:
  void Run(const PrivateMariaDb* db, const std::string& table) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn = db->Connect();
    for (int id = 1;; ++id) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      bool ok = false;
      int64_t due_ns = 0;
      if (conn.ok()) {
        absl::StatusOr<QueryResult> now = (*conn)->Query(absl::StrCat(
            "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) * 1000 "
            "+ ",
            absl::ToInt64Nanoseconds(kLead)));
        ok = now.ok() && now->rows.size() == 1 && now->rows[0][0].has_value() &&
             absl::SimpleAtoi(*now->rows[0][0], &due_ns) &&
             (*conn)
                 ->Execute(absl::StrCat("INSERT INTO msgq.`", table,
                                        "` (id, time_next, message) VALUES (",
                                        id, ", ", due_ns, ", '{}')"))
                 .ok();
      }
      {
        absl::MutexLock lock(&mu_);
        if (ok) {
          committed_[std::to_string(id)] = absl::FromUnixNanos(due_ns);
        } else {
          ++failures_;
        }
      }
      absl::SleepFor(kProduceEvery);  // the production pace
    }
  }

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, absl::Time> committed_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

enum class Stepped { kMsgqd, kMariadb };

struct StepCase {
  Stepped clock;
  int seconds;
};

std::string CaseName(const ::testing::TestParamInfo<StepCase>& info) {
  return absl::StrCat(info.param.clock == Stepped::kMsgqd ? "Msgqd" : "Mariadb",
                      info.param.seconds < 0 ? "Back" : "Forward",
                      std::abs(info.param.seconds), "s");
}

class ClockStepDeliveryTest : public MsgqTest,
                              public ::testing::WithParamInterface<StepCase> {
 protected:
  PrivateMariaDb::Options DbOptions() override {
    PrivateMariaDb::Options options;
    if (GetParam().clock != Stepped::kMariadb) return options;
    absl::StatusOr<std::unique_ptr<FaketimeOffset>> clock =
        FaketimeOffset::Create();
    if (!clock.ok()) {
      clock_status_ = clock.status();
      return options;
    }
    clock_ = *std::move(clock);
    options.env = clock_->Env();
    return options;
  }

  absl::Status clock_status_;
  std::unique_ptr<FaketimeOffset> clock_;  // the stepped process's
};

TEST_P(ClockStepDeliveryTest, NothingEarlyTwiceOrLost) {
  const StepCase step = GetParam();
  if (step.clock == Stepped::kMsgqd) {
    absl::StatusOr<std::unique_ptr<FaketimeOffset>> clock =
        FaketimeOffset::Create();
    ASSERT_TRUE(clock.ok()) << clock.status();
    clock_ = *std::move(clock);
  }
  ASSERT_TRUE(clock_status_.ok()) << clock_status_;
  ASSERT_TRUE(clock_ != nullptr);
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "q",
      absl::StrCat("vt_ack_wait=", kAckWaitSeconds, ",vt_poller_interval=1")));
  ASSERT_NO_FATAL_FAILURE(StartServer({}, step.clock == Stepped::kMsgqd
                                              ? clock_->Env()
                                              : std::vector<std::string>{}));
  ASSERT_NO_FATAL_FAILURE(WaitForBinlog("q"));
  MariadbClockSampler mariadb_clock(*db_);
  AckingSubscriber subscriber(stub_.get(), nullptr, "q", kAckEvery);
  ASSERT_TRUE(subscriber.WaitForFields(absl::Seconds(10)));
  DueProducer producer(*db_, "q");

  absl::SleepFor(absl::Seconds(5));  // a stream before the step
  const absl::Time stepped = absl::Now();
  clock_->Set(step.seconds);
  if (step.clock == Stepped::kMariadb) {
    const absl::Duration want = absl::Seconds(step.seconds);
    ASSERT_TRUE(Eventually(
        [&] {
          return absl::AbsDuration(mariadb_clock.Ahead() - want) <
                 absl::Milliseconds(500);
        },
        absl::Seconds(10)))
        << "MariaDB's clock did not step: "
        << absl::FormatDuration(mariadb_clock.Ahead()) << " ahead";
  }
  absl::SleepFor(absl::Seconds(6));  // a stream after the step
  producer.Stop();
  const std::map<std::string, absl::Time> committed = producer.committed();
  EXPECT_EQ(producer.failures(), 0);
  ASSERT_GT(committed.size(), 200u);

  // Nothing lost. After a step back of MariaDB's clock the rows due within
  // kLead of the step are due 30 s later.
  absl::Time last_due = absl::InfinitePast();
  for (const auto& [id, due] : committed) last_due = std::max(last_due, due);
  std::set<std::string> missing;
  const bool all = Eventually(
      [&] {
        const std::multiset<std::string> got = Received({&subscriber});
        missing.clear();
        for (const auto& [id, due] : committed) {
          if (!got.contains(id)) missing.insert(id);
        }
        return missing.empty();
      },
      absl::Seconds(45));
  EXPECT_TRUE(all) << missing.size() << " of " << committed.size()
                   << " never received, first " << *missing.begin() << "\n"
                   << server_->Log();
  // A second send inside the ack wait would have come by now: rows are
  // read again by the poll, and three more polls have run.
  const int64_t polls = Polls(stub_.get(), "q");
  ASSERT_TRUE(WaitForPolls(stub_.get(), "q", polls + 3, absl::Seconds(10)));
  // The last arrival and ack are inside the sampled span.
  ASSERT_TRUE(
      Eventually([&] { return subscriber.acked().size() >= committed.size(); },
                 absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(50));  // one reading past the last ack
  mariadb_clock.Stop();
  EXPECT_EQ(mariadb_clock.failures(), 0);

  const std::vector<AckingSubscriber::Arrival> arrivals = subscriber.arrivals();
  const std::map<std::string, absl::Time> acked = subscriber.acked();
  std::map<std::string, int> times;
  int early = 0, late = 0, twice = 0, after_ack = 0, unknown = 0;
  absl::Duration most_early = -absl::InfiniteDuration();
  absl::Duration most_late = -absl::InfiniteDuration();
  std::string first_early, first_late;
  for (const AckingSubscriber::Arrival& a : arrivals) {
    auto due = committed.find(a.id);
    if (due == committed.end()) {
      ++unknown;
      continue;
    }
    const bool first = ++times[a.id] == 1;
    if (!first) ++twice;
    auto ack = acked.find(a.id);
    if (ack != acked.end() && a.at > ack->second) ++after_ack;
    // Early: MariaDB's clock, at most, had not reached time_next.
    const std::optional<absl::Time> at_most = mariadb_clock.AtMost(a.at);
    ASSERT_TRUE(at_most.has_value()) << "arrival outside the sampled span";
    const absl::Duration ahead = due->second - *at_most;
    most_early = std::max(most_early, ahead);
    if (ahead > kEarlyTolerance) {
      if (early++ == 0) {
        first_early = absl::StrCat(a.id, " came ", absl::FormatDuration(ahead),
                                   " before its time_next, ",
                                   absl::FormatDuration(a.at - stepped),
                                   " after the step");
      }
    }
    // Late: how long after MariaDB's clock last reached time_next (a second
    // arrival is counted above; its due time is its postpone's).
    if (!first) continue;
    const std::optional<absl::Time> reached =
        mariadb_clock.ReachedBefore(due->second, a.at);
    if (reached.has_value()) {
      const absl::Duration after = a.at - *reached;
      most_late = std::max(most_late, after);
      if (after > kLate && late++ == 0) {
        first_late = absl::StrCat(
            a.id, " came ", absl::FormatDuration(after), " after it was due, ",
            absl::FormatDuration(a.at - stepped), " after the step");
      }
    }
  }
  std::printf(
      "%zu committed, %zu arrivals; early %d (most %s before time_next), "
      "late %d (most %s after), twice %d, after an OK ack %d\n",
      committed.size(), arrivals.size(), early,
      absl::FormatDuration(most_early).c_str(), late,
      absl::FormatDuration(most_late).c_str(), twice, after_ack);
  EXPECT_EQ(early, 0) << "first: " << first_early;
  EXPECT_EQ(late, 0) << "first: " << first_late;
  EXPECT_EQ(twice, 0);
  EXPECT_EQ(after_ack, 0);
  EXPECT_EQ(unknown, 0);
  EXPECT_EQ(arrivals.size(), committed.size());
}

INSTANTIATE_TEST_SUITE_P(
    Steps, ClockStepDeliveryTest,
    ::testing::Values(StepCase{Stepped::kMsgqd, kStepSeconds},
                      StepCase{Stepped::kMsgqd, -kStepSeconds},
                      StepCase{Stepped::kMariadb, kStepSeconds},
                      StepCase{Stepped::kMariadb, -kStepSeconds}),
    CaseName);

}  // namespace
}  // namespace msgq::testing
