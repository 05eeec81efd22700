#include "engine/queue/partition_plan.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace msgq {
namespace {

// Largest multiple of `interval` at most `t` (t >= 0 in practice).
int64_t FloorTo(int64_t t, int64_t interval) {
  int64_t q = t / interval;
  if (t < 0 && q * interval != t) --q;
  return q * interval;
}

}  // namespace

bool IsRangeOnTimeCreated(absl::string_view method,
                          absl::string_view expression) {
  method = absl::StripAsciiWhitespace(method);
  if (!absl::EqualsIgnoreCase(method, "RANGE") &&
      !absl::EqualsIgnoreCase(method, "RANGE COLUMNS")) {
    return false;
  }
  expression = absl::StripAsciiWhitespace(expression);
  if (absl::ConsumePrefix(&expression, "`") &&
      !absl::ConsumeSuffix(&expression, "`")) {
    return false;
  }
  return absl::EqualsIgnoreCase(expression, "time_created");
}

absl::StatusOr<std::optional<int64_t>> ParsePartitionBound(
    absl::string_view description) {
  absl::string_view d = absl::StripAsciiWhitespace(description);
  if (absl::EqualsIgnoreCase(d, "MAXVALUE")) return std::nullopt;
  if (d.size() >= 2 && d.front() == '\'' && d.back() == '\'') {
    d = d.substr(1, d.size() - 2);
  }
  int64_t v = 0;
  const bool digits =
      !d.empty() &&
      (absl::ascii_isdigit(static_cast<unsigned char>(d[0])) || d[0] == '-');
  if (!digits || !absl::SimpleAtoi(d, &v)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition bound \"", description, "\" is not an integer or MAXVALUE"));
  }
  return std::optional<int64_t>(v);
}

std::string PartitionNameFor(int64_t less_than_ns) {
  return absl::StrCat(
      "p", absl::FormatTime("%Y%m%d%H%M%S", absl::FromUnixNanos(less_than_ns),
                            absl::UTCTimeZone()));
}

PartitionPlan PlanPartitions(const std::vector<RangePartition>& partitions,
                             int64_t now, int64_t purge_cutoff,
                             int64_t interval_ns, int ahead) {
  PartitionPlan plan;
  if (partitions.empty() || interval_ns <= 0) return plan;

  std::optional<int64_t> highest;
  for (const RangePartition& p : partitions) {
    if (p.less_than.has_value()) highest = p.less_than;
    if (!p.less_than.has_value()) plan.split_maxvalue = p.name;
  }
  const int64_t cell = FloorTo(now, interval_ns);
  const int64_t target = cell + (int64_t{ahead} + 1) * interval_ns;
  if (!highest.has_value() || *highest < target) {
    int64_t bound;
    if (!highest.has_value()) {
      bound = cell + interval_ns;
    } else if (*highest < cell) {
      bound = cell;  // one partition for the gap msgqd was away
    } else {
      bound = FloorTo(*highest, interval_ns) + interval_ns;
    }
    for (; bound <= target; bound += interval_ns) {
      plan.create.push_back(RangePartition{PartitionNameFor(bound), bound});
    }
  }
  if (plan.create.empty()) plan.split_maxvalue.clear();

  for (size_t i = 0; i + 1 < partitions.size(); ++i) {
    const RangePartition& p = partitions[i];
    if (p.less_than.has_value() && *p.less_than <= purge_cutoff) {
      plan.drop_candidates.push_back(p.name);
    }
  }
  return plan;
}

}  // namespace msgq
