#include "engine/queue/partition_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kDay = 86'400'000'000'000;
// 2025-11-24 00:00:00 UTC in ns: a multiple of kDay.
constexpr int64_t kDay0 = 1'763'942'400'000'000'000;

RangePartition P(const std::string& name, int64_t less_than) {
  return RangePartition{name, less_than};
}
RangePartition Max(const std::string& name) {
  return RangePartition{name, std::nullopt};
}

TEST(IsRangeOnTimeCreated, MethodAndExpression) {
  EXPECT_TRUE(IsRangeOnTimeCreated("RANGE", "`time_created`"));
  EXPECT_TRUE(IsRangeOnTimeCreated("RANGE COLUMNS", "`time_created`"));
  EXPECT_TRUE(IsRangeOnTimeCreated("range", " time_created "));
  EXPECT_TRUE(IsRangeOnTimeCreated("RANGE", "`TIME_CREATED`"));
  EXPECT_FALSE(IsRangeOnTimeCreated("HASH", "`time_created`"));
  EXPECT_FALSE(IsRangeOnTimeCreated("LIST", "`time_created`"));
  EXPECT_FALSE(IsRangeOnTimeCreated("RANGE", "`time_next`"));
  EXPECT_FALSE(IsRangeOnTimeCreated("RANGE", "`time_created` DIV 1000"));
  EXPECT_FALSE(IsRangeOnTimeCreated("RANGE", "`time_created"));
  EXPECT_FALSE(IsRangeOnTimeCreated("", ""));
}

TEST(ParsePartitionBound, IntegersAndMaxvalue) {
  EXPECT_EQ(*ParsePartitionBound("MAXVALUE"), std::nullopt);
  EXPECT_EQ(*ParsePartitionBound("maxvalue"), std::nullopt);
  EXPECT_EQ(*ParsePartitionBound("1763942400000000000"),
            std::optional<int64_t>(1763942400000000000));
  EXPECT_EQ(*ParsePartitionBound("'42'"), std::optional<int64_t>(42));
  EXPECT_EQ(*ParsePartitionBound("-5"), std::optional<int64_t>(-5));
  EXPECT_EQ(ParsePartitionBound("").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePartitionBound("TO_DAYS(x)").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePartitionBound("99999999999999999999").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePartitionBound("12abc").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PartitionNameFor, UtcSecondsOfTheBound) {
  EXPECT_EQ(PartitionNameFor(kDay0), "p20251124000000");
  EXPECT_EQ(PartitionNameFor(kDay0 + 3'723'000'000'000), "p20251124010203");
}

TEST(PlanPartitions, NothingForAnEmptyList) {
  EXPECT_EQ(PlanPartitions({}, kDay0, kDay0, kDay, 2), PartitionPlan{});
}

// The example of the header: day 10 noon, cutoff day 9, ahead 2.
TEST(PlanPartitions, SplitsMaxvalueAndListsOldPartitions) {
  std::vector<RangePartition> parts;
  for (int d = 6; d <= 11; ++d)
    parts.push_back(P("d" + std::to_string(d), kDay0 + d * kDay));
  parts.push_back(Max("pmax"));
  const PartitionPlan plan = PlanPartitions(parts, kDay0 + 10 * kDay + kDay / 2,
                                            kDay0 + 9 * kDay, kDay, 2);
  EXPECT_THAT(plan.create,
              ElementsAre(P("p20251206000000", kDay0 + 12 * kDay),
                          P("p20251207000000", kDay0 + 13 * kDay)));
  EXPECT_EQ(plan.split_maxvalue, "pmax");
  EXPECT_THAT(plan.drop_candidates, ElementsAre("d6", "d7", "d8", "d9"));
}

TEST(PlanPartitions, AddsWithoutMaxvalueAndKeepsTheLastPartition) {
  // Everything is old: the last partition is never a candidate.
  const PartitionPlan plan =
      PlanPartitions({P("a", kDay0 + kDay), P("b", kDay0 + 2 * kDay)},
                     kDay0 + 2 * kDay, kDay0 + 2 * kDay, kDay, 1);
  EXPECT_THAT(plan.create, ElementsAre(P("p20251127000000", kDay0 + 3 * kDay),
                                       P("p20251128000000", kDay0 + 4 * kDay)));
  EXPECT_EQ(plan.split_maxvalue, "");
  EXPECT_THAT(plan.drop_candidates, ElementsAre("a"));
}

TEST(PlanPartitions, NothingToCreateWhenFarEnoughAhead) {
  const PartitionPlan plan =
      PlanPartitions({P("a", kDay0 + kDay), P("b", kDay0 + 3 * kDay), Max("m")},
                     kDay0 + kDay / 2, kDay0 - kDay, kDay, 2);
  EXPECT_THAT(plan.create, IsEmpty());
  EXPECT_EQ(plan.split_maxvalue, "");  // nothing to split
  EXPECT_THAT(plan.drop_candidates, IsEmpty());
}

TEST(PlanPartitions, ABoundAtTheCutoffIsACandidateOneAboveIsNot) {
  const PartitionPlan plan = PlanPartitions(
      {P("a", 100), P("b", 101), P("c", 10'000)}, 150, 100, 1000, 0);
  EXPECT_THAT(plan.drop_candidates, ElementsAre("a"));
}

TEST(PlanPartitions, OnePartitionCoversTheGapAfterAnAbsence) {
  // The highest bound is 5 days behind now: one partition up to the current
  // day, then the current day and one ahead.
  const PartitionPlan plan =
      PlanPartitions({P("old", kDay0 + kDay), Max("pmax")},
                     kDay0 + 6 * kDay + 5, kDay0, kDay, 1);
  EXPECT_THAT(plan.create, ElementsAre(P("p20251130000000", kDay0 + 6 * kDay),
                                       P("p20251201000000", kDay0 + 7 * kDay),
                                       P("p20251202000000", kDay0 + 8 * kDay)));
  EXPECT_EQ(plan.split_maxvalue, "pmax");
}

TEST(PlanPartitions, OnlyMaxvalueStartsTheGridAtTheCurrentCell) {
  const PartitionPlan plan =
      PlanPartitions({Max("pmax")}, kDay0 + 7, kDay0 - kDay, kDay, 0);
  EXPECT_THAT(plan.create, ElementsAre(P("p20251125000000", kDay0 + kDay)));
  EXPECT_EQ(plan.split_maxvalue, "pmax");
  EXPECT_THAT(plan.drop_candidates, IsEmpty());
}

TEST(PlanPartitions, AnOffGridHighestBoundContinuesOnTheGrid) {
  const int64_t s = 1'000'000'000;
  const PartitionPlan plan =
      PlanPartitions({P("a", 1000 * s + 500)}, 999 * s, 0, 10 * s, 1);
  // cell 990 s, target 1010 s; highest 1000.0000005 s -> next 1010 s.
  EXPECT_THAT(plan.create,
              ElementsAre(P(PartitionNameFor(1010 * s), 1010 * s)));
}

}  // namespace
}  // namespace msgq
