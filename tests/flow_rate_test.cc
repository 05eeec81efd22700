// msgq_rate_limit end to end (issue 16): only the upper bound is asserted
// (no lower-bound timing on a shared machine).
#include "gmock/gmock.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

class FlowRateTest : public MsgqTest {};

TEST_F(FlowRateTest, SendsStayUnderTheLimitPlusTheBurst) {
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "q", "vt_poller_interval=0.1,msgq_rate_limit=50,msgq_rate_burst=10"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 1000));
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const v1::TableStatus table = FindTable(stub_.get(), "q");
  EXPECT_EQ(table.settings().rate_limit(), 50);
  EXPECT_EQ(table.settings().rate_burst(), 10);
  const absl::Time start = absl::Now();
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(1, absl::Seconds(10)));
  absl::SleepFor(start + absl::Seconds(5) - absl::Now());
  const size_t received = s.row_count();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  // burst + rate * elapsed, plus one batch of slack for the read.
  EXPECT_LE(static_cast<double>(received), 10 + 50 * seconds + 10)
      << received << " in " << seconds << " s";
}

}  // namespace
}  // namespace msgq::testing
