// MysqlLeaseStore: the lease rows of several msgqd instances in MySQL (see
// engine/lease/lease_plan.h and docs/several-instances.md#how-a-lease-works).
//
//   msgq_leases(name, owner, since, expires)      one row per message table
//   msgq_instances(instance, address, started, expires)   one per msgqd
//
// in `database`. Times are Unix nanoseconds on MySQL's clock (the session
// runs with time_zone '+00:00'), so every instance compares expiries on
// the same clock. Every call reconnects when the connection broke;
// UNAVAILABLE when MySQL cannot be reached, the statement's own error
// otherwise.
//
// Thread-compatible: one keeper thread uses it.
#ifndef MSGQ_ENGINE_SQL_MYSQL_LEASE_STORE_H_
#define MSGQ_ENGINE_SQL_MYSQL_LEASE_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/lease/lease_plan.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

class MysqlLeaseStore {
 public:
  MysqlLeaseStore(MysqlOptions options, std::string database);

  // Creates the two tables when missing.
  absl::Status Prepare();
  // Registers or refreshes `self`'s heartbeat row and renews every live
  // lease `self` holds to now + `lease`, then reads every lease row and the
  // live instances back.
  absl::StatusOr<LeaseView> Renew(const std::string& self,
                                  const std::string& address,
                                  absl::Duration lease);
  // Takes `table`'s lease for `self` until now + `lease` when nobody holds
  // it (no row, released, or expired). True when taken.
  absl::StatusOr<bool> Take(const std::string& table, const std::string& self,
                            absl::Duration lease);
  // Hands `tables` over (owner '' and expired now), if `self` holds them.
  absl::Status Release(const std::vector<std::string>& tables,
                       const std::string& self);
  // Releases every lease of `self` and removes its heartbeat row.
  absl::Status Leave(const std::string& self);

 private:
  absl::StatusOr<MysqlConnection*> Conn();
  absl::StatusOr<uint64_t> Execute(const std::string& sql);
  absl::StatusOr<QueryResult> Query(const std::string& sql);

  const MysqlOptions options_;
  const std::string leases_;     // `db`.`msgq_leases`
  const std::string instances_;  // `db`.`msgq_instances`
  std::unique_ptr<MysqlConnection> conn_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_LEASE_STORE_H_
