#include "engine/sql/due_depth_statement.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

TEST(DueDepthStatementTest, CountsDueRowsThroughTheIndexUpToTheCap) {
  MessageTable t;
  t.keyspace = "msgq";
  t.name = "jo`bs";
  EXPECT_EQ(DueDepthSql(t, 1700000000000000000, 100000),
            "SELECT COUNT(*), MIN(NULLIF(`time_next`, 0)) FROM (SELECT "
            "`time_next` FROM `msgq`.`jo``bs` WHERE `time_acked` IS NULL AND "
            "`time_next` <= 1700000000000000000 LIMIT 100001) AS `due`");
}

TEST(DueDepthStatementTest, ParsesCountsCapsAndOldest) {
  QueryResult r;
  r.rows = {{std::string("7"), std::string("123")}};
  absl::StatusOr<DueDepth> d = ParseDueDepth(r, 100);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->count, 7);
  EXPECT_FALSE(d->capped);
  EXPECT_EQ(d->oldest_due_ns, 123);
  r.rows = {{std::string("101"), std::nullopt}};
  d = ParseDueDepth(r, 100);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->count, 100);
  EXPECT_TRUE(d->capped);
  EXPECT_EQ(d->oldest_due_ns, std::nullopt);
  r.rows = {};
  EXPECT_EQ(ParseDueDepth(r, 100).status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace msgq
