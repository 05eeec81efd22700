// PlanLeases: which message tables one msgqd instance should keep, hand
// over and try to take, given what it has seen of the leases and the live
// instances (lease_watch.h).
//
// Every message table has at most one owner, by a lease row in MySQL (see
// lease_keeper.h for the rows and the fencing). Tables are spread so that
// no instance holds more than its fair share, ceil(tables / live
// instances), while the others are alive:
//   keep     my leases, up to my share;
//   release  my leases above my share (another instance joined): handed
//            over, the ones I least prefer first, but only as many as the
//            other live instances have room for below their share;
//   acquire  free tables (no lease, released) and lapsed ones (another's,
//            unchanged for a whole lease of my clock) while I am under my
//            share, the ones I most prefer first. A table free for longer
//            than `grace` is taken even at my share: a table nobody serves
//            is worse than an uneven spread (e.g. an instance that counts
//            as alive but does not take its share).
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

#include "absl/time/time.h"
#include "engine/lease/lease_watch.h"

namespace msgq {

struct LeasePlan {
  std::vector<std::string> keep;
  std::vector<std::string> release;
  std::vector<std::string> acquire;
  int share = 0;  // the fair share the plan used
};

// `tables`: the message tables this instance serves ("keyspace.table");
// `watch`: this instance's reading of the leases and the live instances.
// Leases of tables not in the list are ignored.
LeasePlan PlanLeases(const std::vector<std::string>& tables,
                     const LeaseWatch& watch, absl::Duration grace);

// The rendezvous preference of `self` for `table` (higher is preferred).
uint64_t LeasePreference(const std::string& self, const std::string& table);

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_LEASE_PLAN_H_
