// MysqlLeaseStore: the lease rows of several msgqd instances in MySQL (see
// engine/lease/lease_watch.h and docs/several-instances.md#how-a-lease-works).
//
//   msgq_leases(name, owner, since, expires)      one row per message table
//   msgq_instances(instance, address, started, expires)   one per msgqd
//
// in `database`. Times are Unix nanoseconds on MySQL's clock (the session
// runs with time_zone '+00:00'), for people to read: no decision compares
// them with a clock. Each write of a row raises its `expires` (to
// GREATEST(now + lease, expires + 1), or expires + 1 for a release), so
// that it is the row's version whatever MySQL's clock does: a renewal
// always changes it, and it never comes back to a value read before.
// Every call reconnects when the connection broke; UNAVAILABLE when MySQL
// cannot be reached, the statement's own error otherwise. A statement that
// MySQL aborts (ABORTED: a Galera certification failure, error 1213, or a
// lock wait timeout, 1205) is run again at once, up to kAbortedRetries
// times (engine/lease/lease_retry.h); ABORTED when it still fails. Each
// statement re-checks the row in its WHERE, so running it again is safe.
//
// Thread-compatible: one keeper thread uses it.
#ifndef MSGQ_ENGINE_LEASE_MYSQL_LEASE_STORE_H_
#define MSGQ_ENGINE_LEASE_MYSQL_LEASE_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/lease/lease_watch.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

class MysqlLeaseStore {
 public:
  MysqlLeaseStore(MysqlOptions options, std::string database);

  // Creates the two tables when missing.
  absl::Status Prepare();
  // Prepare(), then every kind of statement the other calls run on the two
  // tables, each changing nothing (WHERE 1 = 0): OK when all pass.
  // UNAVAILABLE when MySQL cannot be reached (or the statement was cut
  // short: ABORTED); FAILED_PRECONDITION otherwise (a missing grant, a
  // table that cannot be created), with MySQL's error, the GRANT
  // statements for this user (GrantStatements) and --leases=false.
  absl::Status Check();
  // "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON `db`.`msgq_leases` TO
  // 'user'@'host'; GRANT ... `db`.`msgq_instances` TO ...;" for `user`, as
  // CURRENT_USER() gives it ("name@host").
  static std::string GrantStatements(const std::string& database,
                                     const std::string& user);
  // Registers or refreshes `self`'s heartbeat row and renews every lease
  // held under `self` (owner = self, whatever its expiry says) to now +
  // `lease`, then reads every lease row and heartbeat row back (heartbeat
  // rows not written for an hour by MySQL's clock are deleted).
  absl::StatusOr<LeaseView> Renew(const std::string& self,
                                  const std::string& address,
                                  absl::Duration lease);
  // Takes `table`'s lease for `self` until now + `lease` if the row still
  // has the version read last, `owner` and `version` (for a table without
  // a row: "" and 0; the row is inserted first). One conditional UPDATE,
  // so no other write can come in between. True when taken.
  absl::StatusOr<bool> Take(const std::string& table, const std::string& self,
                            absl::Duration lease, const std::string& owner,
                            int64_t version);
  // Hands `tables` over (owner ''), if `self` holds them.
  absl::Status Release(const std::vector<std::string>& tables,
                       const std::string& self);
  // Releases every lease of `self` and removes its heartbeat row.
  absl::Status Leave(const std::string& self);

 private:
  absl::StatusOr<MysqlConnection*> Conn();
  absl::StatusOr<uint64_t> Execute(const std::string& sql);
  absl::StatusOr<QueryResult> Query(const std::string& sql);

  // Check() of one table: exists (or created), and takes each statement.
  absl::Status CheckTable(const std::string& table, const std::string& row);

  const MysqlOptions options_;
  const std::string database_;
  const std::string leases_;     // `db`.`msgq_leases`
  const std::string instances_;  // `db`.`msgq_instances`
  std::unique_ptr<MysqlConnection> conn_;
};

// MysqlLockStore: the user-level locks (GET_LOCK) by which msgqd without
// leases finds a second msgqd on the same databases (see
// engine/lease/instance_lock.h). Needs no grant. A lock lives as long as
// the session holding it: the store keeps one connection, with the session
// wait_timeout set to `idle_timeout`, so that MySQL ends the session (and
// frees its locks) of a holder that stopped talking to it (frozen, cut off,
// its host gone) within that time, and at once when the holder's process
// dies (its socket closes). Every call reconnects when the connection
// broke: UNAVAILABLE when MySQL cannot be reached, the statement's own
// error otherwise.
//
// Thread-compatible: one keeper thread uses it.
class MysqlLockStore {
 public:
  // Who holds one lock.
  struct Holder {
    bool mine = false;
    // The holding session (CONNECTION_ID()), 0 when nobody holds it, and
    // its client host:port as information_schema.PROCESSLIST shows it to
    // this user ("" when not shown: another user without PROCESS).
    int64_t connection = 0;
    std::string host;
  };

  MysqlLockStore(MysqlOptions options, absl::Duration idle_timeout);

  // Takes each of `names` that is free (GET_LOCK(name, 0)) and says who
  // holds each, in order. Locks already held are kept (not taken twice).
  absl::StatusOr<std::vector<Holder>> Hold(
      const std::vector<std::string>& names);
  // Closes the connection: every lock goes with it.
  void Release();
  // This store's session (CONNECTION_ID()); 0 before the first Hold().
  int64_t connection_id() const { return connection_id_; }

 private:
  absl::StatusOr<MysqlConnection*> Conn();

  const MysqlOptions options_;
  const absl::Duration idle_timeout_;
  std::unique_ptr<MysqlConnection> conn_;
  int64_t connection_id_ = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_MYSQL_LEASE_STORE_H_
