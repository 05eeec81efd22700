#include "engine/queue/binlog_position.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(BinlogPositionTest, SameFileComparesOffsets) {
  const BinlogPosition read{"binlog.000003", 1200};
  EXPECT_EQ(IncludedIn({"binlog.000003", 980}, read), true);
  EXPECT_EQ(IncludedIn({"binlog.000003", 1200}, read), true);
  EXPECT_EQ(IncludedIn({"binlog.000003", 1201}, read), false);
}

TEST(BinlogPositionTest, FilesCompareByTheirNumber) {
  const BinlogPosition read{"binlog.000010", 4};
  EXPECT_EQ(IncludedIn({"binlog.000009", 900000}, read), true);
  EXPECT_EQ(IncludedIn({"binlog.000011", 300}, read), false);
  // Past 999999 the number has seven digits.
  EXPECT_EQ(IncludedIn({"binlog.999999", 300}, {"binlog.1000000", 4}), true);
}

TEST(BinlogPositionTest, UnknownOrOtherLogsAreNotComparable) {
  EXPECT_EQ(IncludedIn({}, {"binlog.000001", 4}), std::nullopt);
  EXPECT_EQ(IncludedIn({"binlog.000001", 4}, {}), std::nullopt);
  EXPECT_EQ(IncludedIn({"other.000001", 4}, {"binlog.000002", 4}),
            std::nullopt);
  EXPECT_EQ(IncludedIn({"binlog", 4}, {"binlog.000002", 4}), std::nullopt);
}

}  // namespace
}  // namespace msgq
