#include "engine/sql/mysql_activity.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using Kind = MysqlActivity::Kind;

class MysqlActivityTest : public ::testing::Test {
 protected:
  FakeClock clock_{absl::FromUnixSeconds(1000)};
  MysqlActivity activity_{&clock_, absl::Seconds(10)};
};

constexpr char kStalledWrites[] =
    "MySQL has not answered msgqd's writes for 10.5s (over "
    "--mysql_stall_timeout=10s): is its disk full, a global read lock held, "
    "or the server stopped?";

TEST_F(MysqlActivityTest, AWriteInFlightPastTheBoundIsAStallUntilAnswered) {
  const uint64_t read = activity_.Begin(Kind::kRead);
  activity_.End(read, true, 0, "");
  const uint64_t write = activity_.Begin(Kind::kWrite);
  clock_.Advance(absl::Seconds(10));
  EXPECT_TRUE(activity_.Health().ok());  // at the bound, not past it
  clock_.Advance(absl::Milliseconds(500));
  EXPECT_EQ(activity_.Health(), absl::UnavailableError(kStalledWrites));
  // Reads answered meanwhile do not end a write stall.
  activity_.End(activity_.Begin(Kind::kRead), true, 0, "");
  EXPECT_EQ(activity_.Health(), absl::UnavailableError(kStalledWrites));
  activity_.End(write, true, 0, "");
  EXPECT_TRUE(activity_.Health().ok());
}

TEST_F(MysqlActivityTest, WritesTheClientGaveUpOnCountFromTheFirstOne) {
  // A connection whose io_timeout (5 s) is shorter than the bound: each
  // write is lost, the next one sent again.
  uint64_t write = activity_.Begin(Kind::kWrite);
  clock_.Advance(absl::Seconds(5));
  activity_.End(write, false, 2013, "Lost connection");
  clock_.Advance(absl::Seconds(1));
  write = activity_.Begin(Kind::kWrite);
  clock_.Advance(absl::Milliseconds(4500));
  EXPECT_EQ(activity_.Health(), absl::UnavailableError(kStalledWrites));
  activity_.End(write, false, 2013, "Lost connection");
  // Nothing in flight: the stall is said for the bound after the last loss.
  clock_.Advance(absl::Seconds(9));
  EXPECT_EQ(activity_.Health().code(), absl::StatusCode::kUnavailable);
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(activity_.Health().ok());
}

TEST_F(MysqlActivityTest, AnAnswerEndsTheLostRun) {
  uint64_t write = activity_.Begin(Kind::kWrite);
  clock_.Advance(absl::Seconds(5));
  activity_.End(write, false, 2013, "Lost connection");
  activity_.End(activity_.Begin(Kind::kWrite), true, 1205, "lock wait");
  write = activity_.Begin(Kind::kWrite);
  clock_.Advance(absl::Seconds(9));
  EXPECT_TRUE(activity_.Health().ok());
  activity_.Cancel(write);
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(activity_.Health().ok());
}

TEST_F(MysqlActivityTest, AReadOnlyRefusalLastsUntilAProbeSeesItWritable) {
  activity_.ObserveReadOnly(false, false);
  activity_.End(activity_.Begin(Kind::kWrite), true, 1290,
                "MySQL error 1290: read-only");
  EXPECT_EQ(activity_.Health(),
            absl::UnavailableError("MySQL refuses msgqd's writes: it is "
                                   "read-only: MySQL error 1290: read-only"));
  activity_.ObserveReadOnly(true, false);
  EXPECT_EQ(activity_.Health(),
            absl::UnavailableError(
                "MySQL refuses msgqd's writes: it is read-only (@@read_only=1, "
                "@@innodb_read_only=0): MySQL error 1290: read-only"));
  // Successful writes (a user MySQL lets write) do not clear it; the probe
  // does.
  activity_.End(activity_.Begin(Kind::kWrite), true, 0, "");
  EXPECT_EQ(activity_.Health().code(), absl::StatusCode::kUnavailable);
  activity_.ObserveReadOnly(false, false);
  EXPECT_TRUE(activity_.Health().ok());
}

TEST_F(MysqlActivityTest, ReadOnlyServerWithoutRefusalsStaysReady) {
  activity_.ObserveReadOnly(true, false);
  activity_.End(activity_.Begin(Kind::kWrite), true, 0, "");
  activity_.End(activity_.Begin(Kind::kRead), true, 1290, "read");
  EXPECT_TRUE(activity_.Health().ok());
}

TEST_F(MysqlActivityTest, StalledReadsAreSaid) {
  activity_.Begin(Kind::kRead);
  clock_.Advance(absl::Seconds(11));
  EXPECT_EQ(activity_.Health(),
            absl::UnavailableError(
                "MySQL has not answered msgqd's reads for 11s (over "
                "--mysql_stall_timeout=10s): is its disk full, a global read "
                "lock held, or the server stopped?"));
}

}  // namespace
}  // namespace msgq
