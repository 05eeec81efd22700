// InstanceLock: with --leases=false, finds a second msgqd serving the same
// databases, and keeps it from sending the same rows.
//
// --leases=false is for a deployment that runs one msgqd. Two started by
// mistake (a second host, an old unit left running) would both poll and
// send every table: every message twice. So each msgqd holds, per served
// database D, the MySQL user-level lock GET_LOCK('msgq:D', 0) (LockName)
// on a connection of its own, and a table is granted to its manager
// (MessageManager::Own) only while the lock of its database is held. The
// msgqd that does not get the lock sends nothing: it logs one line naming
// the holder, shows "standby" in ListTables (Ownership: owner and error
// name the holder) and in the ownership metrics, and takes over in the
// round after the holder is gone.
//
// Why GET_LOCK: it needs no grant and no table (a user that lacks the lease
// grants is the reason for --leases=false), and it ends with the session:
// a holder killed with -9 frees it at once (its socket closes). A holder
// that stops talking without closing (SIGSTOP, a network partition, its
// host gone) keeps the session until MySQL's wait_timeout, which the
// keeper sets on its session to 2 * lease; the holder's grant ends lease *
// 3/4 after its last successful round, so it has stopped sending long
// before the lock can pass. That ordering is on two clocks (the holder's
// monotonic clock, MySQL's session timeout), as good as the lease rows'
// fencing only in practice: the lock is a guard against a mistake, not a
// way to share tables. --leases (lease rows, lease_keeper.h) is.
//
// Naming the holder: MySQL says which session holds a lock
// (IS_USED_LOCK), and information_schema.PROCESSLIST shows that session's
// client host:port to the same MySQL user. The holder logs its instance id
// with its session id when it takes the lock, so the two lines match.
//
// Row images after a grant (MessageManager::Own's `images_wait`): the
// first acquisition of a database's lock, with no other holder seen since
// this msgqd started, sends rows from their binlog images at once; a lock
// taken after another holder was seen, or held again on a new session of
// ours (the lock was free in between and may have passed through another
// msgqd), uses images only for changes after its first read's binlog
// position (RowReconciler rule 6), as the other msgqd may have sent rows
// whose changes the binlog has not shown yet. GET_LOCK keeps no history: a
// holder that let go between this msgqd's start and its first round goes
// unseen, one more reason the lock is a guard against a mistake.
//
// Rounds every lease / 5 (OwnershipKeeper); a round that cannot reach MySQL
// changes nothing and the grants run out. Thread-safety: as
// OwnershipKeeper.
#ifndef MSGQ_ENGINE_LEASE_INSTANCE_LOCK_H_
#define MSGQ_ENGINE_LEASE_INSTANCE_LOCK_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/lease/mysql_lease_store.h"
#include "engine/lease/ownership_keeper.h"

namespace msgq {

class InstanceLock final : public OwnershipKeeper {
 public:
  struct Options {
    std::string self;                    // instance id, for the logs
    std::vector<std::string> databases;  // one lock each
    absl::Duration lease = absl::Seconds(5);
  };

  // `store` must have been made with IdleTimeout(options.lease).
  InstanceLock(Options options, std::unique_ptr<MysqlLockStore> store,
               Clock* clock, Tables tables);
  ~InstanceLock() override;

  // The lock of `database`: "msgq:" + database, or, past MySQL's 64
  // characters for a lock name, its first 42 and a hash.
  static std::string LockName(const std::string& database);
  // The wait_timeout of the keeper's session.
  static absl::Duration IdleTimeout(absl::Duration lease) { return lease * 2; }

  // Always OK: GET_LOCK needs no grant.
  absl::Status Check() override { return absl::OkStatus(); }
  // "off" while this msgqd holds the lock of the table's database (it
  // sends, without leases); "standby", owner naming the holder ("MySQL
  // connection N from HOST:PORT") and error saying why, while another
  // session holds it, and before the first round; "unknown" with the error
  // while MySQL does not answer.
  TableOwnership Ownership(const std::string& table) const override;

 private:
  using Holder = MysqlLockStore::Holder;

  void Round() override;
  // Disowns every table and closes the session (its locks go with it).
  void Leave() override;
  // Logs what changed since the last round, per database.
  void LogChanges(const std::map<std::string, Holder>& before,
                  const std::map<std::string, Holder>& now,
                  int64_t my_connection) const;
  static std::string Describe(const Holder& holder);
  std::string StandbyReason(const std::string& database,
                            const Holder& holder) const;

  // Constant after construction.
  const Options options_;
  const std::unique_ptr<MysqlLockStore> store_;  // the thread's only
  Clock* const clock_;
  const Tables tables_;

  mutable absl::Mutex mu_;
  // Who held each database's lock at the last round; the round's error.
  bool ran_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Holder> holders_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);

  // Keeper thread only (Round). Per database: the session of ours that
  // first held its lock, and whether another session may have held it
  // since this msgqd started (see "Row images" above).
  std::map<std::string, int64_t> held_on_;
  std::set<std::string> contested_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_INSTANCE_LOCK_H_
