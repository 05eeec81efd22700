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

// A failover to a server whose binlog has the same base name: its places
// compare with none of the old server's; unnamed servers compare as one.
TEST(BinlogPositionTest, PlacesOnAnotherServerAreNotComparable) {
  const BinlogPosition read{"binlog.000010", 500, "1@db-a:3306"};
  EXPECT_EQ(IncludedIn({"binlog.000010", 400, "1@db-a:3306"}, read), true);
  EXPECT_EQ(IncludedIn({"binlog.000010", 600, "1@db-a:3306"}, read), false);
  EXPECT_EQ(IncludedIn({"binlog.000010", 400, "2@db-b:3306"}, read),
            std::nullopt);
  EXPECT_EQ(IncludedIn({"binlog.000001", 4, "1@db-a:3307"}, read),
            std::nullopt);
  EXPECT_EQ(IncludedIn({"binlog.000010", 400}, read), true);
  EXPECT_EQ(IncludedIn(read, {"binlog.000010", 400}), false);
  EXPECT_NE((BinlogPosition{"binlog.000010", 500, "2@db-b:3306"}), read);
}

}  // namespace
}  // namespace msgq
