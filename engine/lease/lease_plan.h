// PlanLeases: which message tables one msgqd instance should keep, hand
// over and try to take, given what MySQL last said about the leases and the
// live instances.
//
// Every message table has at most one owner, by a lease row in MySQL with
// an expiry on MySQL's clock (see lease_keeper.h for the rows and the
// fencing). Tables are spread so that no instance holds more than its fair
// share, ceil(tables / live instances), while the others are alive:
//   keep     my leases that have not expired, up to my share;
//   release  my leases above my share (another instance joined): handed
//            over, the ones I least prefer first, but only as many as the
//            other live instances have room for below their share;
//   acquire  tables with no lease, a released one, or an expired one, while
//            I am under my share, the ones I most prefer first. A table free
//            for longer than `grace` is taken even at my share: a table
//            nobody serves is worse than an uneven spread (e.g. an instance
//            that counts as alive but does not take its share).
// Preference is a rendezvous hash of (instance, table), so instances that
// plan at the same moment reach for different tables; the conditional
// UPDATE that takes a lease settles any race.
//
// Pure function: no I/O, no clock. Thread-compatible.
#ifndef MSGQ_ENGINE_LEASE_LEASE_PLAN_H_
#define MSGQ_ENGINE_LEASE_LEASE_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace msgq {

// One row of the lease table, as read back.
struct LeaseRow {
  std::string table;  // "keyspace.table"
  std::string owner;  // instance id; empty once released
  int64_t since = 0;  // Unix ns, MySQL's clock
  int64_t expires = 0;
};

// What MySQL said at one moment.
struct LeaseView {
  int64_t now = 0;  // MySQL's clock, Unix ns
  // Instances whose heartbeat row has not expired.
  std::vector<std::string> alive;
  std::vector<LeaseRow> leases;
};

struct LeasePlan {
  std::vector<std::string> keep;
  std::vector<std::string> release;
  std::vector<std::string> acquire;
  int share = 0;  // the fair share the plan used
};

// `tables`: the message tables this instance serves ("keyspace.table").
// Leases of tables not in the list are ignored.
LeasePlan PlanLeases(const std::string& self,
                     const std::vector<std::string>& tables,
                     const LeaseView& view, int64_t grace_ns);

// The rendezvous preference of `self` for `table` (higher is preferred).
uint64_t LeasePreference(const std::string& self, const std::string& table);

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_LEASE_PLAN_H_
