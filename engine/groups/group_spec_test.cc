#include "engine/groups/group_spec.h"

#include "gtest/gtest.h"

namespace msgq {
namespace {

MessageTable Table() {
  MessageTable t;
  t.keyspace = "app";
  t.name = "orders";
  t.columns = {Column{"id", "bigint", "bigint(20)"},
               Column{"type", "varchar", "varchar(32)", "utf8mb4"},
               Column{"priority", "tinyint", "tinyint(4)"}};
  t.streamed = {t.columns[0], t.columns[1]};
  return t;
}

TEST(GroupSpecTest, PlansAValidGroup) {
  absl::StatusOr<GroupPlan> plan = PlanGroup(
      Table(), {.name = "search", .from = "gtid:0-1-5", .filter = "type='a'"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->name, "search");
  EXPECT_EQ(plan->start.kind, GroupStart::Kind::kGtid);
  EXPECT_EQ(plan->start.gtid, "0-1-5");
  EXPECT_EQ(plan->filter, "type = 'a'");
}

TEST(GroupSpecTest, NameThenFilterThenFromAreChecked) {
  EXPECT_EQ(PlanGroup(Table(), {.name = "", .from = "x", .filter = "typ=1"})
                .status()
                .message(),
            "group name is empty");
  EXPECT_EQ(PlanGroup(Table(), {.name = "g", .from = "x", .filter = "typ=1"})
                .status()
                .message(),
            "filter: unknown column \"typ\"; columns: id, type, priority");
  EXPECT_EQ(
      PlanGroup(Table(), {.name = "g", .from = "", .filter = "priority=1"})
          .status()
          .message(),
      "filter: column \"priority\" is not streamed by the table");
  EXPECT_EQ(PlanGroup(Table(), {.name = "g", .from = "x", .filter = ""})
                .status()
                .message(),
            "--from=\"x\": use earliest, latest, gtid:D-S-N[,D-S-N...] or "
            "time:TIMESTAMP");
  EXPECT_EQ(PlanGroup(Table(), {.name = "g", .from = "time:now", .filter = ""})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace msgq
