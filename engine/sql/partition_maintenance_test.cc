#include "engine/sql/partition_maintenance.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

PartitionStatements Statements() {
  MessageTable table;
  table.keyspace = "app";
  table.name = "q`1";
  return PartitionStatements(table, "`app`.`q``1`");
}

TEST(PartitionStatements, ListsPartitionsByHexLiteralNames) {
  EXPECT_EQ(Statements().ListPartitions(),
            "SELECT PARTITION_NAME, PARTITION_METHOD, PARTITION_EXPRESSION, "
            "PARTITION_DESCRIPTION FROM information_schema.PARTITIONS WHERE "
            "TABLE_SCHEMA = _utf8mb4 X'617070' AND TABLE_NAME = _utf8mb4 "
            "X'716031' ORDER BY PARTITION_ORDINAL_POSITION");
}

TEST(PartitionStatements, BlockerReadsOnePartition) {
  EXPECT_EQ(Statements().Blocker("p`x", 1000, std::nullopt),
            "SELECT `id`, `time_acked` FROM `app`.`q``1` PARTITION (`p``x`) "
            "WHERE `time_acked` IS NULL OR `time_acked` >= 1000 ORDER BY "
            "`time_acked` LIMIT 1");
  EXPECT_EQ(Statements().Blocker("p1", 1000, 400),
            "SELECT `id`, `time_acked` FROM `app`.`q``1` PARTITION (`p1`) "
            "WHERE (`time_acked` IS NULL AND NOT (`time_next` IS NULL AND "
            "`time_dead` IS NOT NULL AND `time_dead` < 400)) OR `time_acked` "
            ">= 1000 ORDER BY `time_acked` LIMIT 1");
}

TEST(PartitionStatements, CreateAddsOrSplitsMaxvalue) {
  PartitionPlan plan;
  EXPECT_EQ(Statements().Create(plan), "");
  plan.create = {{"p1", 10}, {"p2", 20}};
  EXPECT_EQ(
      Statements().Create(plan),
      "ALTER TABLE `app`.`q``1` WAIT 1 ADD PARTITION (PARTITION `p1` VALUES "
      "LESS THAN (10), PARTITION `p2` VALUES LESS THAN (20))");
  plan.split_maxvalue = "pmax";
  EXPECT_EQ(Statements().Create(plan),
            "ALTER TABLE `app`.`q``1` WAIT 1 REORGANIZE PARTITION `pmax` INTO "
            "(PARTITION `p1` VALUES LESS THAN (10), PARTITION `p2` VALUES "
            "LESS THAN (20), PARTITION `pmax` VALUES LESS THAN MAXVALUE)");
}

TEST(PartitionStatements, Drop) {
  EXPECT_EQ(Statements().Drop("p20251124000000"),
            "ALTER TABLE `app`.`q``1` WAIT 1 DROP PARTITION `p20251124000000`");
}

}  // namespace
}  // namespace msgq
