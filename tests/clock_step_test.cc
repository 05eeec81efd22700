// msgqd's wall clock steps (an NTP step, an operator's `date -s`), as
// libfaketime (Debian's faketime) makes them for the msgqd process alone:
// its monotonic clock runs on, MariaDB's clock is untouched. Delivery must
// neither stall nor send early: waits run on the monotonic clock, due times
// are judged on MySQL's clock.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/fixture.h"
#include "tests/temp_dir.h"

namespace msgq::testing {
namespace {

constexpr char kFaketime[] =
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

class ClockStepTest : public MsgqTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MsgqTest::SetUp());
    if (!std::ifstream(kFaketime).good()) {
      GTEST_SKIP() << kFaketime
                   << " is missing (tools/setup installs faketime)";
    }
    auto dir = MakeTempDir("clock");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    offset_file_ = dir_->path() + "/offset";
    ASSERT_NO_FATAL_FAILURE(StepTo("+0"));
  }
  // msgqd's environment: its wall clock is real time plus the offset in
  // offset_file_, read again at most once a second.
  std::vector<std::string> FaketimeEnv() const {
    return {absl::StrCat("LD_PRELOAD=", kFaketime),
            "FAKETIME_TIMESTAMP_FILE=" + offset_file_,
            "FAKETIME_CACHE_DURATION=1", "DONT_FAKE_MONOTONIC=1"};
  }
  // Sets msgqd's wall clock to real time `offset` ("-20": 20 s behind) and
  // waits out libfaketime's one-second cache, so the step has happened.
  void StepTo(const std::string& offset) {
    std::ofstream(offset_file_) << offset << "\n";
    absl::SleepFor(absl::Milliseconds(1500));
  }
  // Inserts ids [from, to] one at a time, due at MySQL's now (as an
  // application scheduling with UNIX_TIMESTAMP() does); each must arrive
  // within `bound`.
  void EachArrivesWithin(StreamCollector& s, int from, int to,
                         absl::Duration bound) {
    for (int id = from; id <= to; ++id) {
      const size_t before = s.row_count();
      const absl::Time t0 = absl::Now();
      Exec(absl::StrCat(
          "INSERT INTO msgq.q (id, time_next, message) VALUES (", id,
          ", CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED), '{}')"));
      ASSERT_TRUE(s.WaitForRows(before + 1, bound))
          << "row " << id << " not there after " << bound << "\n"
          << server_->Log();
      printf("row %d after %.1f ms\n", id,
             absl::ToDoubleMilliseconds(absl::Now() - t0));
    }
  }

  std::unique_ptr<launch::OwnedDir> dir_;
  std::string offset_file_;
};

TEST_F(ClockStepTest, StepBackNeitherStallsNorDelays) {
  CreateTable("q", "vt_poller_interval=30,vt_ack_wait=30");
  StartServer({}, FaketimeEnv());
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(EachArrivesWithin(s, 1, 2, absl::Seconds(2)));
  ASSERT_NO_FATAL_FAILURE(StepTo("-20"));
  // Due at MySQL's now, which msgqd's clock says is 20 s away.
  ASSERT_NO_FATAL_FAILURE(EachArrivesWithin(s, 3, 8, absl::Seconds(2)));
}

// Without the binlog, rows are found by polls that ask for rows due by
// now: MySQL's now, not msgqd's clock 20 s behind.
TEST_F(ClockStepTest, PolledRowsAfterAStepBackAreNotDelayed) {
  CreateTable("q", "vt_poller_interval=1,vt_ack_wait=30");
  StartServer({"--binlog=false"}, FaketimeEnv());
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(EachArrivesWithin(s, 1, 2, absl::Seconds(3)));
  ASSERT_NO_FATAL_FAILURE(StepTo("-20"));
  ASSERT_NO_FATAL_FAILURE(EachArrivesWithin(s, 3, 5, absl::Seconds(3)));
}

// A step forward: rows keep arriving at once, and a sent row waits its
// ack wait and backoff on MySQL's clock before it is sent again.
TEST_F(ClockStepTest, StepForwardNeitherStallsNorResendsEarly) {
  // Sent again 4 s (ack wait) + 4 to 5.3 s (the first backoff) later.
  CreateTable("q", "vt_poller_interval=30,vt_ack_wait=4");
  StartServer({}, FaketimeEnv());
  WaitForBinlog("q");
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForFields(absl::Seconds(10)));
  ASSERT_NO_FATAL_FAILURE(EachArrivesWithin(s, 1, 1, absl::Seconds(2)));
  const absl::Time sent = absl::Now();
  ASSERT_NO_FATAL_FAILURE(StepTo("+20"));
  ASSERT_NO_FATAL_FAILURE(EachArrivesWithin(s, 2, 4, absl::Seconds(2)));
  // A burst, one transaction each: rows beyond the pump's pace wait for
  // a timed wake-up, which must not wait for the wall clock's 20 s.
  const absl::Time burst = absl::Now();
  for (int id = 100; id < 150; ++id) InsertRange("q", id, id);
  ASSERT_TRUE(s.WaitForRows(54, absl::Seconds(2)))
      << s.row_count() << " rows after the burst";
  printf("burst of 50 after %.1f ms\n",
         absl::ToDoubleMilliseconds(absl::Now() - burst));
  // Row 1 (not acked) does not come again before 8 s after its send.
  const absl::Duration early = absl::Seconds(7.5) - (absl::Now() - sent);
  ASSERT_GT(early, absl::ZeroDuration()) << "the machine is too slow";
  EXPECT_FALSE(s.WaitForRows(55, early))
      << "row " << s.ids().back() << " came again early";
  ASSERT_TRUE(s.WaitForRows(55, absl::Seconds(5)))
      << db_->Scalar(
             "SELECT CONCAT(epoch, ' ', time_next - "
             "UNIX_TIMESTAMP(NOW(6)) * 1e9) FROM msgq.q WHERE id = 1")
      << "\n"
      << server_->Log();
  EXPECT_EQ(s.ids()[54], "1");
  printf("row 1 again after %.1f s\n",
         absl::ToDoubleSeconds(absl::Now() - sent));
}

}  // namespace
}  // namespace msgq::testing
