// OwnershipKeeper: decides, on a thread of its own, which message tables
// this msgqd may send, and grants them to their MessageManagers
// (MessageManager::Own / Disown; the managers are built with
// ManagerOptions::leased, so they send nothing until granted). Two kinds:
//
//   LeaseKeeper   (--leases, the default) lease rows in MySQL share the
//                 tables among any number of msgqd (lease_keeper.h);
//   InstanceLock  (--leases=false) one msgqd per database, checked with
//                 GET_LOCK, so that a second one started by mistake stays
//                 idle instead of sending the same rows (instance_lock.h).
//
// This base runs the rounds: one every `every`, and one at once when woken
// (tables were loaded). A round that cannot reach MySQL changes nothing:
// grants are given until a time on the monotonic clock and run out by
// themselves.
//
// Thread-safety: the public methods are thread-safe. A derived class must
// call Stop() in its destructor (Stop() calls Leave(), a virtual).
#ifndef MSGQ_ENGINE_LEASE_OWNERSHIP_KEEPER_H_
#define MSGQ_ENGINE_LEASE_OWNERSHIP_KEEPER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/monotonic_cond_var.h"
#include "engine/lease/table_ownership.h"
#include "engine/queue/manager/message_manager.h"

namespace msgq {

class OwnershipKeeper {
 public:
  // The loaded tables by "keyspace.table".
  using Tables =
      std::function<std::map<std::string, std::shared_ptr<MessageManager>>()>;

  explicit OwnershipKeeper(absl::Duration every) : every_(every) {}
  virtual ~OwnershipKeeper();
  OwnershipKeeper(const OwnershipKeeper&) = delete;
  OwnershipKeeper& operator=(const OwnershipKeeper&) = delete;

  // Checks, once, before Start(), that MySQL lets this keeper work.
  // FAILED_PRECONDITION with a message for the operator when it never will
  // (a missing grant): the caller should not serve. OK when it can, and
  // also when MySQL cannot be reached now (the rounds keep trying).
  virtual absl::Status Check() = 0;
  // Starts the rounds; the first runs at once if Wake() came before.
  void Start();
  // A round now (e.g. tables were loaded).
  void Wake();
  // Ends the thread, then Leave() if Start() ran. Idempotent.
  void Stop();

  // This instance's view of `table` ("keyspace.table").
  virtual TableOwnership Ownership(const std::string& table) const = 0;

 protected:
  // One round on the keeper's thread.
  virtual void Round() = 0;
  // After the last round: disown every table, hand what is held over.
  virtual void Leave() = 0;

 private:
  void Run();

  const absl::Duration every_;
  absl::Mutex mu_;
  MonotonicCondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_LEASE_OWNERSHIP_KEEPER_H_
