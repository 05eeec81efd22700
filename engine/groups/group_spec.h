// PlanGroup: a CreateGroup request checked against its table, before any
// MySQL work (docs/design/consumer-groups.md#creating-starting-replaying).
//
// Example:
//   absl::StatusOr<GroupPlan> plan = PlanGroup(
//       manager->table(), {.name = "search", .from = "latest",
//                          .filter = "type IN ('a','b')"});
//
// Checks, in this order, the name (group_name.h), the filter
// (group_filter.h, against the table's columns; each of its columns one the
// table streams, which msgqd tests in a row's image) and where it starts
// (group_start.h), and returns the first error: INVALID_ARGUMENT, or
// UNIMPLEMENTED for --from=time:.
//
// Thread-safe (a pure function).
#ifndef MSGQ_ENGINE_GROUPS_GROUP_SPEC_H_
#define MSGQ_ENGINE_GROUPS_GROUP_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/groups/group_start.h"
#include "engine/message_table.h"

namespace msgq {

struct GroupSpec {
  std::string name;
  std::string from;    // --from; "" = latest
  std::string filter;  // --filter; "" = every row
};

struct GroupPlan {
  std::string name;
  GroupStart start;
  std::string filter;  // canonical
};

absl::StatusOr<GroupPlan> PlanGroup(const MessageTable& table,
                                    const GroupSpec& spec);

}  // namespace msgq

#endif  // MSGQ_ENGINE_GROUPS_GROUP_SPEC_H_
