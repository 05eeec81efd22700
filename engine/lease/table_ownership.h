// TableOwnership: one instance's view of who sends a message table (see
// lease_keeper.h for how ownership is decided). A plain value.
#ifndef MSGQ_ENGINE_LEASE_TABLE_OWNERSHIP_H_
#define MSGQ_ENGINE_LEASE_TABLE_OWNERSHIP_H_

#include <cstdint>
#include <string>

namespace msgq {

struct TableOwnership {
  // "owner", "standby", "off" (leases disabled: this instance sends
  // without asking) or "unknown" (the lease table cannot be read).
  std::string state = "off";
  // The instance holding the lease as MySQL last said; empty when none.
  std::string owner;
  // When that owner took the lease, and its last renewal plus the lease
  // (Unix ns, MySQL's clock; shown only, no decision compares them with a
  // clock); 0 when unknown.
  int64_t since = 0;
  int64_t expires = 0;
  // Why the lease could not be read or taken; empty otherwise.
  std::string error;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_TABLE_OWNERSHIP_H_
