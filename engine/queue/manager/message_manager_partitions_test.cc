// The partition purge step of a MessageManager (tables RANGE-partitioned on
// time_created): it replaces the DELETE purge, counts what the store did and
// how many partitions are held back, and fails like any statement.
#include "engine/queue/manager/message_manager_fixture.h"

namespace msgq::manager_test {
namespace {

PartitionReport Report(int created, std::vector<std::string> dropped,
                       std::vector<std::pair<std::string, std::string>> held) {
  PartitionReport r;
  r.created = created;
  r.dropped = std::move(dropped);
  r.held_back = std::move(held);
  return r;
}

TEST_F(MessageManagerTest, PartitionedTablePurgesByPartitionNotDelete) {
  ASSERT_NO_FATAL_FAILURE(Init({.purge_after_s = 60,
                                .poller_interval_s = 10,
                                .failure_columns = true,
                                .purge_by_partition = true}));
  store_->PutAcked("1", Now() - 3600 * kSecond);
  store_->partition_reports.push_back(Report(3, {"p1"}, {{"p2", "15"}}));
  store_->partition_reports.push_back(Report(0, {}, {{"p2", "15"}}));
  store_->partition_reports.push_back(Report(1, {"p2"}, {}));
  const int64_t t0 = Now();
  RunOnce();
  ASSERT_EQ(store_->partition_calls.size(), 1u);
  EXPECT_EQ(store_->partition_calls[0], t0);
  EXPECT_EQ(store_->purge_calls(), 0);  // no DELETE of acked rows
  ASSERT_NE(store_->Find("1"), nullptr);
  EXPECT_EQ(stats().partitions_created, 3);
  EXPECT_EQ(stats().partitions_dropped, 1);
  EXPECT_EQ(stats().partitions_held_back, 1);

  RunOnce();  // not due again before the poller interval
  EXPECT_EQ(store_->partition_calls.size(), 1u);
  Advance(absl::Seconds(10));
  RunOnce();
  ASSERT_EQ(store_->partition_calls.size(), 2u);
  EXPECT_EQ(stats().partitions_dropped, 1);
  EXPECT_EQ(stats().partitions_held_back, 1);
  Advance(absl::Seconds(10));
  RunOnce();
  ASSERT_EQ(store_->partition_calls.size(), 3u);
  EXPECT_EQ(store_->partition_calls[2], t0 + 20 * kSecond);
  EXPECT_EQ(stats().partitions_created, 4);
  EXPECT_EQ(stats().partitions_dropped, 2);
  EXPECT_EQ(stats().partitions_held_back, 0);
  EXPECT_EQ(store_->purge_calls(), 0);
}

TEST_F(MessageManagerTest, PartitionStepOutageMarksMysqlDown) {
  ASSERT_NO_FATAL_FAILURE(Init({.poller_interval_s = 10,
                                .failure_columns = true,
                                .purge_by_partition = true}));
  store_->partition_reports.push_back(absl::UnavailableError("gone"));
  RunOnce();
  ASSERT_EQ(store_->partition_calls.size(), 1u);
  EXPECT_FALSE(stats().mysql_ok);
  EXPECT_EQ(stats().partitions_held_back, 0);
}

TEST_F(MessageManagerTest, UnpartitionedTableKeepsTheDeletePurge) {
  ASSERT_NO_FATAL_FAILURE(Init({.purge_after_s = 60, .failure_columns = true}));
  store_->PutAcked("1", Now() - 3600 * kSecond);
  RunOnce();
  EXPECT_EQ(store_->purge_calls(), 1);
  EXPECT_TRUE(store_->partition_calls.empty());
  EXPECT_EQ(store_->Find("1"), nullptr);
}

}  // namespace
}  // namespace msgq::manager_test
