// MysqlPrimary: which of several MySQL servers of one replication topology
// is the writable primary, shared by every connection msgqd makes.
//
// msgqd given several servers (--mysql_host=a,b:3307) serves the one with
// @@read_only=0. MysqlConnection::Connect() tries them in Order() (the
// primary last found first, so a reconnect costs one round trip), skips a
// read-only one, and reports the one it settled on with Found(). When the
// writable server changes, generation() moves on: every connection opened
// under an older generation reports itself broken (MysqlConnection::stale),
// so pools, stores, the lease keeper and the binlog follower reconnect, to
// the new primary, through the paths they already take after a lost
// connection. The binlog follower resumes there by GTID (MariaDB GTIDs are
// global across the topology) and its restart makes every table poll once.
//
// A primary that dies is noticed by the connections themselves. One that
// stays up but turns read-only (a switchover) refuses an unprivileged
// user's writes (error 1290, mapped to UNAVAILABLE), and a MysqlPrimaryMonitor
// (mysql_primary_monitor.h) checks @@read_only every second for users whose
// privileges (SUPER, READ ONLY ADMIN) let them write anyway.
//
// Galera (the servers are nodes of one MariaDB Galera cluster, wsrep_on):
// every node is writable, and the one to serve is one that is synced and in
// the primary component. The monitor checks every node each second and
// marks those that are not (a joiner, a donor or desynced node, one cut off
// in a non-primary component) Unservable(): Order() leaves them out, and
// when the primary is one, its connections go stale as after Lost(). A
// node's binlog carries every node's commits (log_slave_updates) under the
// same GTIDs (wsrep_gtid_mode), so the binlog follower resumes on the next
// node by GTID as after any other move. Plain servers are never marked.
//
// Thread-safety: thread-safe.
#ifndef MSGQ_ENGINE_SQL_MYSQL_PRIMARY_H_
#define MSGQ_ENGINE_SQL_MYSQL_PRIMARY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace msgq {

struct MysqlEndpoint {
  std::string host;
  int port = 3306;

  std::string ToString() const;
  bool operator==(const MysqlEndpoint& other) const {
    return host == other.host && port == other.port;
  }
};

// Parses "host[:port][,host[:port]...]" (--mysql_host); a missing port is
// `default_port`. IPv6 addresses go in brackets: "[::1]:3307".
// INVALID_ARGUMENT, naming the bad entry, for an empty list, an empty host,
// or a port that is not a number in 1..65535.
absl::StatusOr<std::vector<MysqlEndpoint>> ParseMysqlEndpoints(
    absl::string_view hosts, int default_port);

// What a Galera node reports of itself (SHOW GLOBAL STATUS LIKE 'wsrep_%'
// and @@read_only).
struct WsrepState {
  bool ready = false;          // wsrep_ready
  int local_state = 0;         // wsrep_local_state: 4 is Synced
  std::string state_comment;   // wsrep_local_state_comment
  std::string cluster_status;  // wsrep_cluster_status: Primary, non-Primary
  bool read_only = false;      // @@read_only
};

// Reads a WsrepState from (Variable_name, Value) rows of SHOW GLOBAL STATUS
// (names in any case; other rows ignored) and @@read_only's value.
// INVALID_ARGUMENT naming the first of wsrep_ready, wsrep_local_state and
// wsrep_cluster_status that is missing or unreadable.
absl::StatusOr<WsrepState> ParseWsrepState(
    const std::vector<std::pair<std::string, std::string>>& status_rows,
    absl::string_view read_only);

// Empty when a node in `state` may be served (ready, Synced, in the
// Primary component, not read-only); otherwise why not, for a log line,
// e.g. "wsrep_local_state 2 (Donor/Desynced)".
std::string WsrepUnservableReason(const WsrepState& state);

class MysqlPrimary {
 public:
  // `endpoints` is not empty.
  explicit MysqlPrimary(std::vector<MysqlEndpoint> endpoints);

  const std::vector<MysqlEndpoint>& endpoints() const { return endpoints_; }

  // Indexes into endpoints() in the order a connection should try them:
  // the current primary first, then the others in their configured order;
  // servers last seen failing (even the primary) at the end. Unservable
  // ones are left out (empty when every server is).
  std::vector<size_t> Order() const;

  // A connection settled on endpoints()[i] (writable). Returns the
  // generation the connection belongs to: the current one when i already
  // was the primary, a new one when the primary moved to i.
  uint64_t Found(size_t i);
  // endpoints()[i] could not be reached: tried last from now on, until a
  // connection settles on it again. Connections stay valid (a dead server's
  // break by themselves; a busy one's still work).
  void Failed(size_t i);
  // endpoints()[i] is read-only: when it is the primary, connections of the
  // current generation are stale from now on and the next Connect() looks
  // for the primary among all servers.
  void Lost(size_t i);
  // Galera: endpoints()[i] is up but not a node to serve (see
  // WsrepUnservableReason): left out of Order() until Servable(i). When it
  // is the primary (again: a connection may have settled on it before it
  // was marked), as Lost(i). Idempotent otherwise.
  void Unservable(size_t i);
  // Galera: endpoints()[i] may be served again.
  void Servable(size_t i);
  bool servable(size_t i) const;

  // Lock-free: read before every statement (MysqlConnection::stale).
  uint64_t generation() const { return generation_.load(); }
  // The current primary's index, or -1 when none is known.
  int primary() const;

 private:
  const std::vector<MysqlEndpoint> endpoints_;
  mutable absl::Mutex mu_;
  int primary_ ABSL_GUARDED_BY(mu_) = -1;
  // Written under mu_, read without it.
  std::atomic<uint64_t> generation_{0};
  std::vector<bool> failing_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> unservable_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_SQL_MYSQL_PRIMARY_H_
