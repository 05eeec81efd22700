// LeaseKeeper: holds this msgqd's table leases in MySQL and tells each
// table's MessageManager whether it may send
// (docs/several-instances.md#how-a-lease-works).
//
// Every `lease / 5` (and when woken) a round on the keeper's thread:
//   1. renews this instance's heartbeat and live leases, reads all back;
//   2. grants each table it holds ownership until t0 + lease * 3/4, t0
//      being the monotonic time before the renewing statement (MySQL set
//      the lease's expiry at t0 + lease or later, so the manager stops a
//      quarter lease before anyone else may take the table); tables it no
//      longer holds are disowned;
//   3. plans (lease_plan.h): hands over what is above its share once the
//      manager is quiesced (no postpone of a send pending), takes free
//      tables.
// A round that fails (MySQL unreachable) changes nothing: the grants run
// out by themselves. Stop() ends the thread and releases every lease and
// the heartbeat row (call it after the managers stopped and flushed).
//
// Thread-safety: all public methods are thread-safe. No lock is held across
// MySQL or a manager call.
#ifndef MSGQ_ENGINE_LEASE_LEASE_KEEPER_H_
#define MSGQ_ENGINE_LEASE_LEASE_KEEPER_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/clock.h"
#include "engine/lease/table_ownership.h"
#include "engine/queue/manager/message_manager.h"
#include "engine/sql/mysql_lease_store.h"

namespace msgq {

class LeaseKeeper {
 public:
  struct Options {
    std::string self;     // instance id
    std::string address;  // written in the heartbeat row
    absl::Duration lease = absl::Seconds(5);
  };
  // The loaded tables by "keyspace.table".
  using Tables =
      std::function<std::map<std::string, std::shared_ptr<MessageManager>>()>;

  LeaseKeeper(Options options, std::unique_ptr<MysqlLeaseStore> store,
              Clock* clock, Tables tables);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  void Start();
  // A round now (e.g. tables were loaded).
  void Wake();
  // Ends the thread, then releases every lease and the heartbeat row.
  // Idempotent.
  void Stop();

  // This instance's view of `table` ("keyspace.table").
  TableOwnership Ownership(const std::string& table) const;

 private:
  void Run();
  void Round();

  const Options options_;
  const std::unique_ptr<MysqlLeaseStore> store_;  // the thread's only
  Clock* const clock_;
  const Tables tables_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool prepared_ ABSL_GUARDED_BY(mu_) = false;
  // The last view read, and the error of the last round (ok if none).
  LeaseView view_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  // Tables granted to their manager, and those being handed over.
  std::set<std::string> owned_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> releasing_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_LEASE_KEEPER_H_
