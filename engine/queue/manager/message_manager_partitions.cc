// MessageManager and the partition purge: for a table RANGE-partitioned on
// time_created (MessageTable::purge_by_partition), a purge step creates
// partitions ahead and drops old ones instead of DELETE-ing acked rows
// (engine/sql/partition_maintenance.h has the statements and the
// guarantee). Like every purge step it runs only while this msgqd owns the
// table (RoundScheduler::PurgeDue). The class contract is in
// message_manager.h.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {

void MessageManager::DoPartitionPurge(const Work& work) {
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<PartitionReport> report = store_->MaintainPartitions(work.now);
  const absl::Duration took = clock_->MonotonicNow() - start;
  std::vector<std::string> lines;
  Log log;
  {
    absl::MutexLock lock(&mu_);
    counters_.purge_latency.Observe(took);
    if (!report.ok()) {
      log = StatementFailedLocked("partition purge", report.status());
    } else {
      log = MysqlOkLocked();
      scheduler_.PurgeDone(false);
      counters_.partitions_created += report->created;
      counters_.partitions_dropped +=
          static_cast<int64_t>(report->dropped.size());
      counters_.partitions_held_back =
          static_cast<int64_t>(report->held_back.size());
      // One line when a partition starts being held back, not every step.
      std::set<std::string> held;
      for (const auto& [name, id] : report->held_back) {
        held.insert(name);
        if (held_back_.count(name) == 0) {
          lines.push_back(absl::StrCat(
              log_name_, ": partition `", name,
              "` is past vt_purge_after but kept: it still holds unacked or "
              "dead rows (e.g. id ",
              id, ")"));
        }
      }
      held_back_ = std::move(held);
      const std::string error(report->create_error.message());
      if (error != partition_create_error_ && !error.empty()) {
        lines.push_back(absl::StrCat(
            log_name_, ": creating partitions ahead failed: ", error));
      }
      partition_create_error_ = error;
    }
  }
  Emit(std::move(log));
  for (std::string& line : lines) Emit(std::make_pair("W", std::move(line)));
  if (report.ok() || !IsUnavailable(report.status())) DoDeadPurge();
}

}  // namespace msgq
