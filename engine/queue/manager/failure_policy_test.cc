#include "engine/queue/manager/failure_policy.h"

#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace msgq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
constexpr int64_t kNow = int64_t{1'700'000'000} * 1'000'000'000;

TableSettings Settings(int max_attempts, absl::Duration max_age) {
  TableSettings s;
  s.max_attempts = max_attempts;
  s.max_age = max_age;
  return s;
}

Message Row(int64_t epoch, size_t bytes, int64_t time_created = 0) {
  Message m;
  m.id = "1";
  m.epoch = epoch;
  m.time_created = time_created;
  auto row = std::make_shared<PackedRow>();
  row->lengths = {static_cast<int64_t>(bytes)};
  row->values = std::string(bytes, 'x');
  m.row = row;
  return m;
}

TEST(FailurePolicyTest, RowsWithinEveryLimitMaySend) {
  FailurePolicy f(Settings(3, absl::Hours(1)), 100, 10);
  EXPECT_EQ(f.DeathReason(Row(2, 90, kNow - 3600'000'000'000), kNow),
            std::nullopt);
  // msgq_max_age spares a row never sent (epoch 0) and one without a
  // time_created.
  EXPECT_EQ(f.DeathReason(Row(0, 10, kNow - 7200'000'000'000), kNow),
            std::nullopt);
  EXPECT_EQ(f.DeathReason(Row(1, 10, 0), kNow), std::nullopt);
}

TEST(FailurePolicyTest, TooLargeRowsDieFirst) {
  FailurePolicy f(Settings(3, absl::ZeroDuration()), 100, 10);
  // 91 value bytes + 10 for the one length: 101 > 100.
  EXPECT_EQ(f.DeathReason(Row(5, 91), kNow),
            "row of 101 bytes is larger than the stream limit of 100 bytes "
            "(msgqd --max_message_bytes; raise it together with the clients' "
            "gRPC max receive message size)");
  EXPECT_EQ(f.DeathReason(Row(0, 90), kNow), std::nullopt);
  Message cut = Row(0, 10);
  cut.unread_bytes = 5000;  // the read left its large columns out
  EXPECT_EQ(f.DeathReason(cut, kNow),
            "row of 5000 bytes is larger than the stream limit of 100 bytes "
            "(msgqd --max_message_bytes; raise it together with the clients' "
            "gRPC max receive message size)");
}

TEST(FailurePolicyTest, MaxAttemptsAndMaxAge) {
  FailurePolicy f(Settings(3, absl::Hours(1)), 100, 10);
  EXPECT_EQ(f.DeathReason(Row(3, 10), kNow),
            "not acked after 3 sends (msgq_max_attempts=3)");
  EXPECT_EQ(f.DeathReason(Row(1, 10, kNow - 3661'500'000'000), kNow),
            "not acked and first enqueued 3661 s ago (msgq_max_age=3600)");
  FailurePolicy unlimited(Settings(0, absl::ZeroDuration()), 100, 10);
  EXPECT_EQ(unlimited.DeathReason(Row(1000, 10, 1), kNow), std::nullopt);
}

TEST(FailurePolicyTest, DeathLinesKeepToTheMinutesBudget) {
  FailurePolicy f(Settings(0, absl::ZeroDuration()), 100, 2);
  EXPECT_EQ(f.DeathLine(1, "a died", kStart), "a died");
  EXPECT_EQ(f.DeathLine(4, "b died", kStart + absl::Seconds(10)), "b died");
  EXPECT_EQ(f.DeathLine(3, "c died", kStart + absl::Seconds(20)), std::nullopt);
  EXPECT_EQ(f.DeathLine(2, "d died", kStart + absl::Seconds(59)), std::nullopt);
  // A new minute: the next line names the 5 deaths not logged, once.
  EXPECT_EQ(f.DeathLine(1, "e died", kStart + absl::Seconds(60)),
            "e died (and 5 earlier deaths not logged: over 2 lines a minute)");
  EXPECT_EQ(f.DeathLine(1, "f died", kStart + absl::Seconds(61)), "f died");
  EXPECT_EQ(f.DeathLine(1, "g died", kStart + absl::Seconds(62)), std::nullopt);
}

TEST(FailurePolicyTest, CountsTheDeadOfWatchedTablesOnceAMinute) {
  FailurePolicy f(Settings(0, absl::ZeroDuration()), 100, 10);
  EXPECT_FALSE(f.CountDue(kStart, /*watched=*/false));  // an idle table
  EXPECT_TRUE(f.CountDue(kStart, /*watched=*/true));
  EXPECT_FALSE(f.CountDue(kStart + absl::Seconds(59), true));
  EXPECT_TRUE(f.CountDue(kStart + FailurePolicy::kCountEvery, true));
  // A new subscriber: count at once, then wait the interval again.
  f.CountSoon(/*dead_list=*/false);
  EXPECT_TRUE(f.CountDue(kStart + absl::Seconds(61), true));
  EXPECT_FALSE(f.CountDue(kStart + absl::Seconds(62), true));
}

TEST(FailurePolicyTest, ADeadListCountsOnceWithoutSubscribers) {
  FailurePolicy f(Settings(0, absl::ZeroDuration()), 100, 10);
  f.CountSoon(/*dead_list=*/true);
  EXPECT_TRUE(f.CountDue(kStart, /*watched=*/false));
  // Counted: an unwatched table is not counted again, even when due.
  EXPECT_FALSE(f.CountDue(kStart + absl::Minutes(5), false));
  EXPECT_TRUE(f.CountDue(kStart + absl::Minutes(5), true));
}

}  // namespace
}  // namespace msgq
