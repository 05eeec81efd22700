// The drain's cost savers end to end: the postpone grace (--postpone_grace,
// docs/benchmarks.md#the-postpone-grace) and the ack lane (--ack_lane,
// docs/benchmarks.md#the-ack-lane), against a real MariaDB, a real msgqd and
// real gRPC streams.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"

namespace msgq::testing {
namespace {

class DrainTest : public MsgqTest {};

// Acks that arrive within the grace leave the rows as the producer wrote
// them (epoch 0: no postpone was written); an unacked row is postponed
// once its grace runs out. The grace is long so that a loaded machine
// still acks within it.
TEST_F(DrainTest, AnAckWithinTheGraceMeansNoPostponeIsWritten) {
  // The grace is at most a tenth of the ack wait.
  ASSERT_NO_FATAL_FAILURE(CreateTable("q", "vt_batch_size=10,vt_ack_wait=60"));
  ASSERT_NO_FATAL_FAILURE(InsertRange("q", 1, 10));
  ASSERT_NO_FATAL_FAILURE(StartServer({"--postpone_grace=5s"}));
  StreamCollector s(stub_.get(), "q");
  ASSERT_TRUE(s.WaitForRows(10, absl::Seconds(10)));
  std::vector<std::string> ids = s.ids();
  ASSERT_EQ(ids.size(), 10u);
  ids.erase(std::find(ids.begin(), ids.end(), "10"));
  int64_t acked = -1;
  ASSERT_TRUE(AckIds(stub_.get(), "q", ids, &acked).ok());
  EXPECT_EQ(acked, 9);
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NOT "
                        "NULL AND epoch = 0"),
            "9");
  EXPECT_EQ(db_->Scalar("SELECT epoch FROM msgq.q WHERE id = 10"), "0");
  // 10 was not acked: its postpone comes when its grace runs out.
  ASSERT_TRUE(Eventually(
      [&] {
        return db_->Scalar("SELECT epoch FROM msgq.q WHERE id = 10") == "1";
      },
      absl::Seconds(15)));
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"),
            "1");
}

// With the ack lane, three streams drain 3000 rows through a 500-row cache
// (so the table's round polls while the lane acks): each id arrives once
// and every ack counts exactly its rows.
TEST_F(DrainTest, WithTheAckLaneEveryIdArrivesOnceAndIsAcked) {
  ASSERT_NO_FATAL_FAILURE(CreateTable(
      "q", "vt_batch_size=20,vt_cache_size=500,vt_poller_interval=30"));
  const int n = 3000;
  for (int from = 1; from <= n; from += 1000) {
    ASSERT_NO_FATAL_FAILURE(InsertRange("q", from, from + 999));
  }
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--ack_lane=true", "--postpone_grace=50ms"}));
  StreamCollector a(stub_.get(), "q"), b(stub_.get(), "q"), c(stub_.get(), "q");
  std::vector<StreamCollector*> streams = {&a, &b, &c};
  std::vector<size_t> done(streams.size(), 0);
  int64_t acked_total = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (acked_total < n && absl::Now() < deadline) {
    bool any = false;
    for (size_t i = 0; i < streams.size(); ++i) {
      const std::vector<std::string> ids = streams[i]->ids();
      if (ids.size() == done[i]) continue;
      std::vector<std::string> fresh(ids.begin() + done[i], ids.end());
      done[i] = ids.size();
      int64_t acked = -1;
      ASSERT_TRUE(AckIds(stub_.get(), "q", fresh, &acked).ok());
      acked_total += acked;
      any = true;
    }
    if (!any) absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(acked_total, n);
  std::multiset<std::string> all;
  for (StreamCollector* s : streams) {
    for (const std::string& id : s->ids()) all.insert(id);
  }
  std::multiset<std::string> expected;
  for (int i = 1; i <= n; ++i) expected.insert(std::to_string(i));
  EXPECT_EQ(all.size(), static_cast<size_t>(n));
  EXPECT_TRUE(all == expected) << "an id arrived twice or not at all";
  EXPECT_EQ(db_->Scalar("SELECT COUNT(*) FROM msgq.q WHERE time_acked IS NULL"),
            "0");
}

}  // namespace
}  // namespace msgq::testing
