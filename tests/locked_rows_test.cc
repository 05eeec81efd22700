// Rows an application keeps locked (SELECT ... FOR UPDATE), end to end: a
// real MariaDB, a real msgqd and gRPC clients. msgqd's writes of those rows
// wait (docs/design/locked-rows.md); the rest of the table flows.
#include <algorithm>
#include <deque>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

constexpr char kQ[] = "{keyspace=\"msgq\",table=\"q\"}";

// Reads a stream's responses as they arrive (polling the collector every
// 5 ms: arrival times are late by at most that), and acks each response's
// rows with one MessageAck, on a thread of its own, in arrival order.
class AckingConsumer {
 public:
  struct AckCall {
    std::vector<std::string> ids;
    grpc::Status status;
    int64_t acked = -1;
    absl::Duration took;
  };

  AckingConsumer(v1::Messaging::Stub* stub, StreamCollector* stream)
      : stub_(stub),
        stream_(stream),
        reader_([this] { Read(); }),
        acker_([this] { AckAll(); }) {}
  ~AckingConsumer() { Stop(); }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (reader_.joinable()) reader_.join();
    if (acker_.joinable()) acker_.join();
  }

  // When each id arrived (its first delivery), and every delivery's id.
  std::map<std::string, absl::Time> arrivals() const {
    absl::MutexLock lock(&mu_);
    return arrivals_;
  }
  std::vector<std::string> delivered() const {
    absl::MutexLock lock(&mu_);
    return delivered_;
  }
  std::vector<AckCall> acks() const {
    absl::MutexLock lock(&mu_);
    return acks_;
  }

 private:
  void Read() {
    size_t seen = 0;
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      const std::vector<v1::MessageStreamResponse> responses =
          stream_->responses();
      const absl::Time now = absl::Now();
      absl::MutexLock lock(&mu_);
      for (; seen < responses.size(); ++seen) {
        std::vector<std::string> ids;
        for (const v1::Row& row : responses[seen].rows()) {
          ids.push_back(RowValue(row, 0));
          delivered_.push_back(ids.back());
          arrivals_.try_emplace(ids.back(), now);
        }
        if (!ids.empty()) to_ack_.push_back(std::move(ids));
      }
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(5));
    }
  }

  void AckAll() {
    while (true) {
      std::vector<std::string> ids;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &AckingConsumer::ReadyToAck));
        if (to_ack_.empty()) return;
        ids = std::move(to_ack_.front());
        to_ack_.pop_front();
      }
      AckCall call;
      call.ids = ids;
      const absl::Time start = absl::Now();
      call.status = AckIds(stub_, "q", ids, &call.acked);
      call.took = absl::Now() - start;
      absl::MutexLock lock(&mu_);
      acks_.push_back(std::move(call));
    }
  }

  bool ReadyToAck() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !to_ack_.empty();
  }

  v1::Messaging::Stub* const stub_;
  StreamCollector* const stream_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, absl::Time> arrivals_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> delivered_ ABSL_GUARDED_BY(mu_);
  std::deque<std::vector<std::string>> to_ack_ ABSL_GUARDED_BY(mu_);
  std::vector<AckCall> acks_ ABSL_GUARDED_BY(mu_);
  std::thread reader_;
  std::thread acker_;
};

class LockedRowsTest : public HttpTest {};

// Rows 1-5 are due and an application holds them with SELECT ... FOR
// UPDATE for 20 s, while 100 more rows are inserted (one every 150 ms) and
// a subscriber reads and acks everything it gets. msgqd sends 1-5 (its
// polls are consistent reads, which locks do not stop); their postpones and
// acks wait for the lock, and nothing else does: each other row arrives
// within 2 s of its INSERT and each ack returns OK within 2 s (msgqd waits
// at most 1 s, once, for a locked row; before, its statements waited out
// InnoDB's 50 s default). The acks of 1-5 are answered at once with the
// rows they acked (none) and written by msgqd within 3 s of the release;
// every row arrives exactly once.
TEST_F(LockedRowsTest, RowsAnApplicationLocksHoldBackOnlyTheirOwnWrites) {
  const absl::Duration kBound = absl::Seconds(2);
  const absl::Duration kHold = absl::Seconds(20);
  ASSERT_NO_FATAL_FAILURE(
      CreateTable("q", "vt_ack_wait=30,vt_poller_interval=0.5"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 5));
  ASSERT_NO_FATAL_FAILURE(StartHttpServer());
  auto app = db_->Connect();
  ASSERT_TRUE(app.ok()) << app.status();
  ASSERT_TRUE((*app)->Execute("BEGIN").ok());
  auto held = (*app)->Query(
      "SELECT id FROM msgq.q FORCE INDEX (PRIMARY) WHERE id <= 5 "
      "FOR UPDATE");
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_EQ(held->rows.size(), 5u);
  const absl::Time locked_at = absl::Now();
  const std::set<std::string> locked = {"1", "2", "3", "4", "5"};

  StreamCollector stream(stub_.get(), "q");
  AckingConsumer consumer(stub_.get(), &stream);
  std::map<std::string, absl::Time> inserted;
  for (int id = 6; id <= 105; ++id) {
    inserted[absl::StrCat(id)] = absl::Now();
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", id, id));
    absl::SleepFor(absl::Milliseconds(150));
  }
  // (Not fatal: the checks below say which rows were late.)
  EXPECT_TRUE(stream.WaitForRows(105, locked_at + kHold - absl::Now()))
      << stream.row_count() << " rows within the hold";
  absl::SleepFor(locked_at + kHold - absl::Now());
  // Still held: msgqd wrote nothing of 1-5, and says so.
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE id <= 5 AND "
                        "time_acked IS NULL AND epoch = 0"),
            "5");
  std::map<std::string, double> m = ScrapeMetrics(Url("/metrics"));
  EXPECT_EQ(Sample(m, absl::StrCat("msgq_locked_rows_total", kQ)), 5);
  EXPECT_EQ(Sample(m, absl::StrCat("msgq_locked_rows_waiting", kQ)), 5);
  ASSERT_TRUE((*app)->Execute("ROLLBACK").ok());
  const absl::Time released_at = absl::Now();

  ASSERT_TRUE(Eventually(
      [&] {
        return db_->Scalar(
                   "SELECT COUNT(*) FROM msgq.q WHERE time_acked IS "
                   "NULL") == "0";
      },
      absl::Seconds(3)))
      << db_->Scalar(
             "SELECT GROUP_CONCAT(id) FROM msgq.q WHERE time_acked "
             "IS NULL");
  const absl::Duration settled = absl::Now() - released_at;
  // Within the ack wait (30 s) nothing comes again: a poll every 0.5 s
  // would have sent a row whose postpone msgqd forgot.
  absl::SleepFor(absl::Seconds(2));
  consumer.Stop();

  std::vector<std::string> delivered = consumer.delivered();
  std::sort(delivered.begin(), delivered.end());
  std::vector<std::string> expected;
  for (int id = 1; id <= 105; ++id) expected.push_back(absl::StrCat(id));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(delivered, expected);  // each exactly once
  const std::map<std::string, absl::Time> arrivals = consumer.arrivals();
  absl::Duration slowest_arrival;
  for (const auto& [id, at] : inserted) {
    if (!arrivals.contains(id)) continue;  // the check above failed
    slowest_arrival = std::max(slowest_arrival, arrivals.at(id) - at);
    EXPECT_LT(arrivals.at(id) - at, kBound) << "row " << id;
  }
  absl::Duration slowest_ack;
  size_t acked_ids = 0;
  for (const AckingConsumer::AckCall& call : consumer.acks()) {
    int64_t unlocked = 0;
    for (const std::string& id : call.ids) unlocked += !locked.contains(id);
    EXPECT_TRUE(call.status.ok()) << call.status.error_message();
    EXPECT_EQ(call.acked, unlocked) << call.ids.front();
    EXPECT_LT(call.took, kBound) << "ack of " << call.ids.front();
    slowest_ack = std::max(slowest_ack, call.took);
    acked_ids += call.ids.size();
  }
  EXPECT_EQ(acked_ids, 105u);
  m = ScrapeMetrics(Url("/metrics"));
  EXPECT_EQ(Sample(m, absl::StrCat("msgq_locked_rows_total", kQ)), 5);
  EXPECT_EQ(Sample(m, absl::StrCat("msgq_locked_rows_waiting", kQ)), 0);
  EXPECT_EQ(Sample(m, absl::StrCat("msgq_acked_total", kQ)), 105);
  EXPECT_EQ(Sample(m, absl::StrCat("msgq_sent_total", kQ)), 105);
  std::cout << "slowest arrival " << slowest_arrival << ", slowest ack "
            << slowest_ack << ", locked rows acked " << settled
            << " after the release\n";
}

}  // namespace
}  // namespace msgq::testing
