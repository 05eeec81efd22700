// Partition planning for message tables RANGE-partitioned on time_created
// (schema/message_table_partitioned.sql): which partitions to create ahead
// of time and which old ones may be dropped instead of DELETE-purging their
// rows. Pure functions over the partition list as information_schema
// .PARTITIONS gives it; the SQL that applies a plan is in
// engine/sql/partition_maintenance.h.
//
// The plan:
// - Create: partition bounds lie on a grid of `interval` (multiples of it
//   since the Unix epoch). The table always keeps the partition holding
//   `now` and `ahead` whole partitions after it: when the highest bound is
//   at most floor(now / interval) * interval + ahead * interval, bounds are
//   added up to floor(now / interval) * interval + (ahead + 1) * interval.
//   When the highest bound is behind the current grid cell (msgqd was away),
//   the first new partition covers the whole gap up to the current cell.
//   A MAXVALUE partition, if the table has one, stays last: it is split
//   (REORGANIZE PARTITION) instead of adding after it.
// - Drop candidates: partitions with a bound (not MAXVALUE) at most
//   `purge_cutoff` (now - vt_purge_after), i.e. every row they can hold was
//   enqueued before the cutoff, oldest first, never the last bounded
//   partition (MariaDB refuses to drop a table's only partition). Whether a
//   candidate really holds only acked (or expired dead) rows is checked by
//   the caller against MySQL.
//
// Example (interval 1 day, ahead 2, now = day 10 noon, purge_cutoff day 9):
//   partitions p5 < day 6, p6 < day 7, ..., p10 < day 11, pmax MAXVALUE
//   -> create {< day 12, < day 13} by splitting pmax; drop candidates p5..p8
//      (bounds day 6..day 9).
//
// Thread-safe (pure functions).
#ifndef MSGQ_ENGINE_QUEUE_PARTITION_PLAN_H_
#define MSGQ_ENGINE_QUEUE_PARTITION_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq {

// One RANGE partition: VALUES LESS THAN (less_than), or MAXVALUE (nullopt).
struct RangePartition {
  std::string name;
  std::optional<int64_t> less_than;

  friend bool operator==(const RangePartition&,
                         const RangePartition&) = default;
};

// True when information_schema.PARTITIONS' PARTITION_METHOD and
// PARTITION_EXPRESSION say "RANGE (time_created)" or "RANGE COLUMNS
// (time_created)" (backticks, case and surrounding spaces ignored).
bool IsRangeOnTimeCreated(absl::string_view method,
                          absl::string_view expression);

// PARTITION_DESCRIPTION of a RANGE partition: "MAXVALUE" -> nullopt, a
// decimal integer (optionally quoted, as RANGE COLUMNS shows it) -> its
// value. INVALID_ARGUMENT for anything else (an expression, out of range).
absl::StatusOr<std::optional<int64_t>> ParsePartitionBound(
    absl::string_view description);

// The name msgqd gives a partition it creates: "p" and the bound as UTC
// yyyymmddhhmmss, e.g. p20261124000000 for VALUES LESS THAN midnight
// 2026-11-24 (in ns). Bounds below one second apart get the same name; the
// grid is whole seconds (msgq_partition_interval is).
std::string PartitionNameFor(int64_t less_than_ns);

struct PartitionPlan {
  // New partitions, ascending, all with a bound.
  std::vector<RangePartition> create;
  // Set when `create` must be made by splitting this MAXVALUE partition
  // (REORGANIZE PARTITION it INTO create + itself); empty: ADD PARTITION.
  std::string split_maxvalue;
  // Partitions whose rows are all older than the purge cutoff, oldest first.
  std::vector<std::string> drop_candidates;

  friend bool operator==(const PartitionPlan&, const PartitionPlan&) = default;
};

// `partitions` in ordinal order (ascending bounds, MAXVALUE last if any).
// interval_ns > 0, ahead >= 0. An empty list plans nothing.
PartitionPlan PlanPartitions(const std::vector<RangePartition>& partitions,
                             int64_t now, int64_t purge_cutoff,
                             int64_t interval_ns, int ahead);

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_PARTITION_PLAN_H_
