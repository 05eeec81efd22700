#include "engine/groups/group_spec.h"

#include <utility>

#include "engine/groups/group_filter.h"
#include "engine/groups/group_name.h"

namespace msgq {

absl::StatusOr<GroupPlan> PlanGroup(const MessageTable& table,
                                    const GroupSpec& spec) {
  if (absl::Status s = ValidateGroupName(spec.name); !s.ok()) return s;
  absl::StatusOr<GroupFilter> filter =
      ParseGroupFilter(spec.filter, table.columns);
  if (!filter.ok()) return filter.status();
  // msgqd tests a row's streamed columns (its binlog image, as sent).
  if (absl::StatusOr<RowFilter> bound =
          RowFilter::Bind(*filter, table.streamed);
      !bound.ok()) {
    return bound.status();
  }
  absl::StatusOr<GroupStart> start = ParseGroupStart(spec.from);
  if (!start.ok()) return start.status();
  return GroupPlan{spec.name, *std::move(start), filter->ToString()};
}

}  // namespace msgq
