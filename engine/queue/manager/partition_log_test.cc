#include "engine/queue/manager/partition_log.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace msgq {
namespace {

using Lines = std::vector<std::string>;

PartitionReport HeldBack(std::vector<std::pair<std::string, std::string>> p) {
  PartitionReport r;
  r.held_back = std::move(p);
  return r;
}

TEST(PartitionLogTest, NamesAPartitionWhenItStartsBeingHeldBack) {
  PartitionLog log("table `k`.`t`");
  EXPECT_EQ(log.Lines(PartitionReport{}), Lines{});
  EXPECT_EQ(log.Lines(HeldBack({{"p1", "17"}})),
            Lines{"table `k`.`t`: partition `p1` is past vt_purge_after but "
                  "kept: it still holds unacked or dead rows (e.g. id 17)"});
  // Still held back: not again; p2 joins.
  EXPECT_EQ(log.Lines(HeldBack({{"p1", "18"}, {"p2", "40"}})),
            Lines{"table `k`.`t`: partition `p2` is past vt_purge_after but "
                  "kept: it still holds unacked or dead rows (e.g. id 40)"});
  // p1 let go and held back again later: named again.
  EXPECT_EQ(log.Lines(HeldBack({{"p2", "40"}})), Lines{});
  EXPECT_EQ(log.Lines(HeldBack({{"p1", "19"}, {"p2", "40"}})),
            Lines{"table `k`.`t`: partition `p1` is past vt_purge_after but "
                  "kept: it still holds unacked or dead rows (e.g. id 19)"});
}

TEST(PartitionLogTest, NamesACreateErrorWhenItIsNew) {
  PartitionLog log("t");
  PartitionReport r;
  r.create_error = absl::InternalError("no space");
  EXPECT_EQ(log.Lines(r),
            Lines{"t: creating partitions ahead failed: no space"});
  EXPECT_EQ(log.Lines(r), Lines{});
  EXPECT_EQ(log.Lines(PartitionReport{}), Lines{});
  EXPECT_EQ(log.Lines(r),
            Lines{"t: creating partitions ahead failed: no space"});
  r.create_error = absl::InternalError("other");
  EXPECT_EQ(log.Lines(r), Lines{"t: creating partitions ahead failed: other"});
}

}  // namespace
}  // namespace msgq
