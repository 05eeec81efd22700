// MysqlPrimaryMonitor: notices within a second that the MySQL primary of
// MysqlOptions::primary turned read-only (a switchover), even for a user
// whose privileges let it write to a read-only server, and logs every move
// of the primary. On a Galera cluster it also keeps MysqlPrimary's view of
// which nodes may be served (mysql_primary.h).
//
// A thread of its own, with one connection of its own (to the primary, as
// MysqlConnection::Connect finds it): every `interval` it runs
// `SELECT @@read_only`; a 1 calls MysqlPrimary::Lost() for that server, so
// every connection to it goes stale and reconnects to the writable one. A
// failed check drops the connection; the next check connects afresh.
//
// Galera: when the first server it connects to has wsrep_on=ON, the
// monitor switches, for the rest of its life, to checking every server
// (one connection per server, made directly to it, with `interval` as its
// connect and I/O timeout, at least a second) each `interval`: SHOW GLOBAL
// STATUS of wsrep_ready, wsrep_local_state and wsrep_cluster_status, and
// @@read_only. A node that answers but may not be served (joiner, donor or
// desynced, non-primary component, read-only) is marked
// MysqlPrimary::Unservable() (which moves the primary off it), one that
// may be served again Servable(), one that does not answer Failed() (tried
// last). Each change is logged once. Plain servers keep the one connection
// and the read-only check.
//
// Thread-safety: Start/Stop from one thread (the destructor stops).
#ifndef MSGQ_ENGINE_SQL_MYSQL_PRIMARY_MONITOR_H_
#define MSGQ_ENGINE_SQL_MYSQL_PRIMARY_MONITOR_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/monotonic_cond_var.h"
#include "engine/sql/mysql_connection.h"

namespace msgq {

class MysqlPrimaryMonitor {
 public:
  // `options.primary` is set.
  MysqlPrimaryMonitor(MysqlOptions options, absl::Duration interval);
  ~MysqlPrimaryMonitor();
  MysqlPrimaryMonitor(const MysqlPrimaryMonitor&) = delete;
  MysqlPrimaryMonitor& operator=(const MysqlPrimaryMonitor&) = delete;

  void Start();
  void Stop();

 private:
  // A Galera node's check: its connection and what was last logged of it.
  struct Node {
    std::unique_ptr<MysqlConnection> conn;
    std::string last;  // "" (servable or not yet seen), else why not
  };

  void Loop();
  // One check on conn_ (connecting first when needed).
  void CheckOnce();
  // Galera: one check of every node, then logs a move of the primary.
  void CheckNodes();
  // Galera: endpoints()[i]'s state; UNAVAILABLE when it does not answer.
  absl::StatusOr<WsrepState> CheckNode(size_t i);

  const MysqlOptions options_;
  const absl::Duration interval_;
  // The monitor thread's only:
  std::unique_ptr<MysqlConnection> conn_;
  std::string last_primary_;
  bool galera_ = false;
  std::vector<Node> nodes_;
  absl::Mutex mu_;
  MonotonicCondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_PRIMARY_MONITOR_H_
