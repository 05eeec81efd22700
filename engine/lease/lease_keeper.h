// LeaseKeeper: holds this msgqd's table leases in MySQL and tells each
// table's MessageManager whether it may send
// (docs/several-instances.md#how-a-lease-works,
// docs/design/lease-clocks.md).
//
// Every `lease / 5` (and when woken) a round on the keeper's thread:
//   1. renews this instance's heartbeat and every lease held under its id
//      (each renewal raises the row's version), reads all rows back, and
//      records them in its LeaseWatch at the monotonic time after the
//      reads (lease_watch.h);
//   2. grants each table it holds ownership until t0 + lease * 3/4, t0
//      being the monotonic time before the renewing statement: nobody
//      takes a lease from another instance before having read the version
//      that renewal wrote unchanged for a whole lease (which it read only
//      after the renewal committed, after t0), so the manager stops a
//      quarter lease before anyone else may take the table, whatever
//      MySQL's clock or msgqd's wall clock do; tables it no longer holds
//      are disowned;
//   3. plans (lease_plan.h): hands over what is above its share once the
//      manager is quiesced (no postpone of a send pending), takes free and
//      lapsed tables, each by an UPDATE that names the version it read.
// A round that fails (MySQL unreachable) changes nothing: the grants run
// out by themselves. A renewal that MySQL keeps aborting (on Galera, a
// write racing another node's, error 1213 or 1205, retried at once by the
// store) is a lost race: logged once as info, the round changes nothing
// likewise, and the ownership shown is not "unknown" (lease_retry.h).
// A table another instance serves is logged once per owner ("`t` is served
// by OWNER; this msgqd stands by for it"): this msgqd's subscribers of it
// receive nothing until it takes the table over.
// Stop() ends the thread and releases every lease and the heartbeat row
// (call it after the managers stopped and flushed).
//
// Row images after a grant (MessageManager::Own's `images_wait`): every
// take asks the manager to use images only for changes after the binlog
// position of its first read after the grant (RowReconciler rule 6): the
// last owner, if any, stopped sending before the grant, so its reads are
// all at or before that position.
//
// Check() (before Start) creates the two tables when missing and tries
// every kind of statement the rounds run on them; a grant that is missing
// makes it FAILED_PRECONDITION with the GRANT statements to run and the way
// out (--leases=false), so that msgqd refuses to start rather than never
// send. A MySQL that cannot be reached is not a refusal.
//
// The instance id (Options::self) must name one process at a time: a
// restarted msgqd with the same id finds its leases under that id, renews
// them and sends at once, without waiting for anything. msgqd's default id,
// host:port of the gRPC listener, is that: the port is bound before the
// engine starts and cannot be shared (no SO_REUSEPORT), so while an older
// msgqd with the same id lives (even SIGSTOPped) the new one cannot start,
// and an old one that is dead holds nothing (server/msgqd_server.h).
//
// Thread-safety: all public methods are thread-safe. No lock is held across
// MySQL or a manager call.
#ifndef MSGQ_ENGINE_LEASE_LEASE_KEEPER_H_
#define MSGQ_ENGINE_LEASE_LEASE_KEEPER_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "engine/lease/lease_watch.h"
#include "engine/lease/mysql_lease_store.h"
#include "engine/lease/ownership_keeper.h"
#include "engine/lease/table_ownership.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {

class LeaseKeeper final : public OwnershipKeeper {
 public:
  struct Options {
    std::string self;     // instance id
    std::string address;  // written in the heartbeat row
    absl::Duration lease = absl::Seconds(5);
  };
  LeaseKeeper(Options options, std::unique_ptr<MysqlLeaseStore> store,
              Clock* clock, Tables tables);
  ~LeaseKeeper() override;

  // FAILED_PRECONDITION naming the missing grant (see above); OK when
  // MySQL cannot be reached or keeps aborting the statements.
  absl::Status Check() override;
  TableOwnership Ownership(const std::string& table) const override;

 private:
  using Managers = std::map<std::string, std::shared_ptr<MessageManager>>;

  void Round() override;
  // Releases every lease and the heartbeat row.
  void Leave() override;
  // 1. Prepares the tables once, renews and reads back; records the
  // round's error (logged once) or success.
  absl::StatusOr<LeaseView> Renew();
  // 2. Grants each table held in `view` (owner = self; not being handed
  // over) until `until`, disowns the rest. Returns the tables held.
  // `owned`: the tables held after the previous round; none at the first
  // round.
  std::set<std::string> Grant(const LeaseView& view, const Managers& tables,
                              const std::set<std::string>& releasing,
                              const std::optional<std::set<std::string>>& owned,
                              absl::Time until);
  // 3. Releases what quiesced of `releasing` (updated), plans on
  // `watch_`, takes.
  void Rebalance(const std::set<std::string>& held, Managers& tables,
                 std::set<std::string>& releasing);

  const Options options_;
  const std::unique_ptr<MysqlLeaseStore> store_;  // the thread's only
  Clock* const clock_;
  const Tables tables_;
  LeaseWatch watch_;  // the thread's only
  // The other instance each table was last logged as served by (the
  // thread's only): a standby names the owner once per owner.
  std::map<std::string, std::string> standby_for_;

  mutable absl::Mutex mu_;
  bool prepared_ ABSL_GUARDED_BY(mu_) = false;
  // A round has granted (owned_ is the previous round's).
  bool granted_ ABSL_GUARDED_BY(mu_) = false;
  // The last renewal lost a race (logged once until one succeeds).
  bool lost_race_ ABSL_GUARDED_BY(mu_) = false;
  // The last view read, the tables whose holder's lease had lapsed in it,
  // and the error of the last round (ok if none).
  LeaseView view_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> lapsed_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  // Tables granted to their manager, and those being handed over.
  std::set<std::string> owned_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> releasing_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_LEASE_KEEPER_H_
