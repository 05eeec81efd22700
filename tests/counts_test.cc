// Exact counts by state (msgq_messages, engine/queue/message_counts.h) end
// to end: a real MariaDB and msgqd, gRPC acks, SQL acks, deaths, a
// redrive, retries, SQL deletes and msgqd's purges; at each quiet point
// /metrics equals SELECT COUNT(*) by state, and no counting read had to
// correct what the binlog kept.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/failure_fixture.h"
#include "tests/http_fixture.h"

namespace msgq::testing {
namespace {

class CountsTest : public FailureTest {
 protected:
  void StartHttpServer(std::vector<std::string> args) {
    args.push_back("--http_listen=127.0.0.1:0");
    ASSERT_NO_FATAL_FAILURE(StartServer(std::move(args)));
    const int port = HttpPortFromLog(server_->Log());
    ASSERT_NE(port, 0) << server_->Log();
    url_ = absl::StrCat("http://127.0.0.1:", port, "/metrics");
  }

  struct States {
    double ready = -1, scheduled = -1, in_flight = -1, dead = -1;
    bool operator==(const States&) const = default;
  };
  friend std::ostream& operator<<(std::ostream& os, const States& s) {
    return os << "{ready " << s.ready << ", scheduled " << s.scheduled
              << ", in_flight " << s.in_flight << ", dead " << s.dead << "}";
  }

  States Shown(const std::string& table,
               std::map<std::string, double>* page = nullptr) {
    std::map<std::string, double> m = ScrapeMetrics(url_);
    auto state = [&](const char* s) {
      return Sample(m, absl::StrCat("msgq_messages{keyspace=\"msgq\",state=\"",
                                    s, "\",table=\"", table, "\"}"));
    };
    States out{state("ready"), state("scheduled"), state("in_flight"),
               state("dead")};
    if (page != nullptr) *page = std::move(m);
    return out;
  }

  // MySQL's counts.
  States Counted(const std::string& table) {
    auto count = [&](const std::string& where) {
      return std::stod(
          db_->Scalar(absl::StrCat("SELECT COUNT(*) FROM msgq.`", table,
                                   "` WHERE time_acked IS NULL AND ", where)));
    };
    const std::string now = "UNIX_TIMESTAMP(NOW(6)) * 1000000000";
    return States{count(absl::StrCat("time_next <= ", now)),
                  count(absl::StrCat("epoch = 0 AND time_next > ", now)),
                  count(absl::StrCat("epoch > 0 AND time_next > ", now)),
                  count("time_next IS NULL")};
  }

  // Waits until /metrics shows `want` and MySQL counts the same.
  void ExpectQuiet(const std::string& table, const States& want) {
    States shown;
    States counted;
    const bool equal = Eventually(
        [&] {
          shown = Shown(table);
          counted = Counted(table);
          return shown == want && counted == want;
        },
        absl::Seconds(15));
    EXPECT_TRUE(equal) << "shown " << shown << ", counted " << counted
                       << ", want " << want;
  }

  std::string url_;
};

TEST_F(CountsTest, BinlogKeepsCountsExactThroughEveryKindOfChange) {
  // vt_purge_after=1: acked rows are deleted by msgqd's purge within
  // seconds.
  ASSERT_NO_FATAL_FAILURE(
      CreateFailureTable("jobs", "vt_ack_wait=60,vt_purge_after=1"));
  ASSERT_NO_FATAL_FAILURE(StartHttpServer({"--leases=false"}));
  // Loaded (counting read of the empty table) before any row exists.
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 0, 0, 0}));

  ASSERT_NO_FATAL_FAILURE(InsertRange("jobs", 1, 20));
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.jobs (id, message, time_next) VALUES "
           "(101, '{}', 4000000000000000000), (102, '{}', "
           "4000000000000000000), (103, '{}', 4100000000000000000)"));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{20, 3, 0, 0}));

  StreamCollector stream(stub_.get(), "jobs");
  ASSERT_TRUE(stream.WaitForRows(20, absl::Seconds(10)));
  std::vector<Delivered> sent = DeliveredRows(stream);
  ASSERT_EQ(sent.size(), 20u);
  std::map<std::string, int64_t> epoch_of;
  for (const auto& [id, epoch] : sent) epoch_of[id] = epoch;
  auto deliveries = [&](std::vector<std::string> ids) {
    std::vector<Delivered> out;
    for (const std::string& id : ids) out.emplace_back(id, epoch_of[id]);
    return out;
  };
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 3, 20, 0}));

  // gRPC acks of 1-5; an application's UPDATE acks 6-8.
  int64_t acked = 0;
  ASSERT_TRUE(
      AckIds(stub_.get(), "jobs", {"1", "2", "3", "4", "5"}, &acked).ok());
  ASSERT_EQ(acked, 5);
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET time_acked = UNIX_TIMESTAMP(NOW(6)) * "
           "1000000000, time_next = NULL WHERE id IN (6, 7, 8)"));
  // 9-11 die; 12 and 13 are retried in an hour.
  v1::MessageNackResponse nacked;
  ASSERT_TRUE(Nack("jobs", deliveries({"9", "10", "11"}), std::nullopt,
                   "poison", /*dead=*/true, &nacked)
                  .ok());
  ASSERT_TRUE(Nack("jobs", deliveries({"12", "13"}), 3600.0, "later",
                   /*dead=*/false, &nacked)
                  .ok());
  // Retried rows wait in flight (sent, not due).
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 3, 9, 3}));

  // 9 is redriven and sent again at once.
  int64_t redriven = 0;
  ASSERT_TRUE(Redrive("jobs", {"9"}, false, &redriven).ok());
  ASSERT_EQ(redriven, 1);
  ASSERT_TRUE(stream.WaitForRows(21, absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 3, 10, 2}));

  // An application deletes a dead row and a scheduled one; msgqd's purge
  // deletes the 8 acked rows (no state changes).
  ASSERT_NO_FATAL_FAILURE(Exec("DELETE FROM msgq.jobs WHERE id IN (10, 103)"));
  ASSERT_TRUE(Eventually(
      [&] {
        return db_->Scalar(
                   "SELECT COUNT(*) FROM msgq.jobs WHERE time_acked "
                   "IS NOT NULL") == "0";
      },
      absl::Seconds(60)));
  // An application reschedules a far-future row to now: sent at once.
  ASSERT_NO_FATAL_FAILURE(
      Exec("UPDATE msgq.jobs SET time_next = 0 WHERE id = 101"));
  ASSERT_TRUE(stream.WaitForRows(22, absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 1, 11, 1}));

  // Acking what waits for its ack leaves the retries, the scheduled and
  // the dead.
  ASSERT_TRUE(AckIds(stub_.get(), "jobs",
                     {"9", "14", "15", "16", "17", "18", "19", "20", "101"},
                     &acked)
                  .ok());
  ASSERT_EQ(acked, 9);
  std::map<std::string, double> page;
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 1, 2, 1}));
  Shown("jobs", &page);
  // The binlog kept them: no counting read corrected anything, and the
  // dead count is the same number under its older name.
  EXPECT_EQ(Sample(page,
                   "msgq_counts_corrections_total{keyspace=\"msgq\","
                   "table=\"jobs\"}"),
            0);
  EXPECT_EQ(
      Sample(page, "msgq_dead_messages{keyspace=\"msgq\",table=\"jobs\"}"), 1);
  EXPECT_EQ(
      Sample(page,
             "msgq_pending_due_messages{keyspace=\"msgq\",table=\"jobs\"}"),
      0);
  stream.Cancel();
  ASSERT_TRUE(stream.WaitForEnd(absl::Seconds(5)));
}

// Without the binlog, the counts follow changes by their periodic
// counting read (--counts_reconcile), and count each read that corrected
// them.
TEST_F(CountsTest, WithoutBinlogTheReconcileCorrectsTheCounts) {
  ASSERT_NO_FATAL_FAILURE(CreateFailureTable("jobs", ""));
  ASSERT_NO_FATAL_FAILURE(StartHttpServer(
      {"--leases=false", "--binlog=false", "--counts_reconcile=1s"}));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{0, 0, 0, 0}));
  // One statement, so that a counting read sees all of it or nothing.
  ASSERT_NO_FATAL_FAILURE(
      Exec("INSERT INTO msgq.jobs (id, message, time_next, epoch) VALUES "
           "(1, '{}', 0, 0), (2, '{}', 0, 0), (3, '{}', 0, 3), "
           "(4, '{}', NULL, 2), (5, '{}', 4000000000000000000, 0), "
           "(6, '{}', 4000000000000000000, 1)"));
  ASSERT_NO_FATAL_FAILURE(ExpectQuiet("jobs", States{3, 1, 1, 1}));
  std::map<std::string, double> page;
  Shown("jobs", &page);
  EXPECT_EQ(Sample(page,
                   "msgq_counts_corrections_total{keyspace=\"msgq\","
                   "table=\"jobs\"}"),
            1);
}

}  // namespace
}  // namespace msgq::testing
