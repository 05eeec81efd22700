// LeaseWatch: what one msgqd instance has seen of the lease rows and the
// heartbeat rows, timed on its own monotonic clock, and what that lets it
// conclude: whose lease has lapsed (may be taken), how long a free table
// has been free (row images, the plan's grace), which instances are alive
// (docs/design/lease-clocks.md).
//
// No wall clock decides anything here, neither MySQL's nor msgqd's: every
// write msgqd makes to a lease or heartbeat row raises its `expires`
// (mysql_lease_store.h), so (owner, expires) is the row's version and
// changes at every renewal, take and release. A lease held by another
// instance has *lapsed* once this instance has read the same version for
// a whole lease of its monotonic clock: the renewal that wrote it
// committed before the first of those reads, and its holder stopped
// sending three quarters of a lease after it started that renewal
// (lease_keeper.h). A take then names the version it read
// (UPDATE ... WHERE owner = X AND expires = V), so a renewal that comes
// in between makes the take change nothing.
//
// Pure: no I/O, no clock (`seen` is the caller's monotonic reading).
// Thread-compatible.
#ifndef MSGQ_ENGINE_LEASE_LEASE_WATCH_H_
#define MSGQ_ENGINE_LEASE_LEASE_WATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace msgq {

// One row of the lease table, as read back.
struct LeaseRow {
  std::string table;  // "keyspace.table"
  std::string owner;  // instance id; empty when released or never held
  // Unix ns on MySQL's clock, shown to people, never compared with a
  // clock: when the holder took the lease, and when it ends unless renewed
  // (also the row's version; 0 for a row never held).
  int64_t since = 0;
  int64_t expires = 0;
};

// One heartbeat row (msgq_instances); `expires` is also its version.
struct InstanceRow {
  std::string instance;
  int64_t expires = 0;
};

// What MySQL said at one moment.
struct LeaseView {
  int64_t now = 0;  // MySQL's clock, Unix ns (shown only)
  std::vector<InstanceRow> instances;
  std::vector<LeaseRow> leases;
};

// One table's lease as this instance sees it.
struct TableLease {
  enum class State {
    kFree,    // no row, never held, or released: may be taken at once
    kMine,    // held under this instance's id
    kHeld,    // another instance's, read unchanged for less than a lease
    kLapsed,  // another instance's, read unchanged for a lease or longer
  };
  State state = State::kFree;
  // The version read last (a take names it); "" and 0 without a row.
  std::string owner;
  int64_t version = 0;
  bool row = false;  // the row exists
  // kFree and kLapsed: for how long, at least, nobody has sent the table
  // (InfiniteDuration: it never had an owner); zero otherwise.
  absl::Duration free_for = absl::ZeroDuration();
};

class LeaseWatch {
 public:
  // `self`: this instance's id; `lease`: --lease_duration.
  LeaseWatch(std::string self, absl::Duration lease);

  // Records `view`, every read of which had returned by `seen` (a
  // monotonic reading taken after them). Rows gone from `view` are
  // forgotten.
  void Observe(const LeaseView& view, absl::Time seen);

  // `table` ("keyspace.table") as of the last Observe(); kFree with an
  // infinite free_for when the last view had no row for it (or before the
  // first Observe()).
  TableLease Table(const std::string& table) const;

  // This instance, and every instance whose heartbeat row changed less
  // than a lease before the last Observe() (a row first read then counts
  // as changed then), sorted.
  std::vector<std::string> Alive() const;

  const std::string& self() const { return self_; }

 private:
  struct Seen {
    std::string owner;
    int64_t version = 0;
    absl::Time since;  // when this version was first read
  };

  const std::string self_;
  const absl::Duration lease_;
  absl::Time last_ = absl::InfinitePast();
  absl::flat_hash_map<std::string, Seen> leases_;
  absl::flat_hash_map<std::string, Seen> instances_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_LEASE_WATCH_H_
