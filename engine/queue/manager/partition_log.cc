// PartitionLog: see partition_log.h.
#include "engine/queue/manager/partition_log.h"

#include "absl/strings/str_cat.h"

namespace msgq {

std::vector<std::string> PartitionLog::Lines(const PartitionReport& report) {
  std::vector<std::string> lines;
  std::set<std::string> held;
  for (const auto& [name, id] : report.held_back) {
    held.insert(name);
    if (held_back_.count(name) == 0) {
      lines.push_back(absl::StrCat(
          name_, ": partition `", name,
          "` is past vt_purge_after but kept: it still holds unacked or "
          "dead rows (e.g. id ",
          id, ")"));
    }
  }
  held_back_ = std::move(held);
  const std::string error(report.create_error.message());
  if (error != create_error_ && !error.empty()) {
    lines.push_back(
        absl::StrCat(name_, ": creating partitions ahead failed: ", error));
  }
  create_error_ = error;
  return lines;
}

}  // namespace msgq
