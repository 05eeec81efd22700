// Network faults for integration tests (docs/operations.md#network-faults): a
// network namespace of the test's own, joined to the root namespace through a
// router namespace (two veth pairs, two private /30), whose path the test drops
// silently (every packet lost in the router, both ways: no FIN, no RST, no
// ICMP) and restores.
//
//   NetnsLink     the namespaces and veth pairs: host_address() is the
//                 root namespace's end, inner_address() the inner
//                 namespace's. Traffic goes only between these addresses
//                 (a /29 of 10.213.0.0/16 no address of the machine is in;
//                 the root namespace gets a route for the inner /30 only).
//   NetnsMariaDb  a private MariaDB (tools/mariadb-private) running inside
//                 the namespace, listening on inner_address(): msgqd in the
//                 root namespace reaches it over the link only. The test's
//                 own connection uses the Unix socket, which crosses
//                 network namespaces, so it keeps working during a drop.
//
// How a drop works: a `pfifo limit 0` root qdisc on the router's two
// interfaces discards every forwarded packet (this kernel has no netem and
// no iptables tools). The drop is in the middle, not at an endpoint: a
// packet dropped by its sender's own qdisc counts as local congestion, and
// TCP then retries forever without counting a lost keepalive probe or
// retransmission, which no real network does. The neighbour (ARP) entries
// are permanent, so a new connection's SYN is lost too instead of failing
// fast with "no route".
//
// Cleanup: ~NetnsLink kills the processes left in the namespaces and
// deletes them (the veth pairs go with them), also when the test failed.
// Names carry the owner's pid and start time ("msgq-nf-PID-START-Ni" and
// "...-Nr", interfaces "mqfPIDxNa" to "d"): NetnsLink::Create first deletes
// what test processes that are gone (killed, crashed) left behind, never what a
// live test owns.
//
// A side path (AddSidePath) is a second veth pair straight between the
// root namespace and the inner one, never dropped: a Galera node in the
// namespace then loses its cluster peers (over the router) while msgqd
// still reaches its SQL port, as when only the database nodes' own
// network is cut.
//
// Needs root and iproute2's `ip` and `tc`: Supported() says why not, for a
// GTEST_SKIP.
//
// Files: netns_fixture.cc (NetnsLink, EstablishedTo), netns_mariadb.cc
// (NetnsMariaDb), netns_plumbing.h/.cc (the `ip` commands both use).
//
// Not thread-safe: the test's thread drives it.
//
// Example:
//   std::string why;
//   if (!NetnsLink::Supported(&why)) GTEST_SKIP() << why;
//   auto link = NetnsLink::Create();
//   ASSERT_TRUE(link.ok()) << link.status();
//   auto db = NetnsMariaDb::Start(**link);
//   ... msgqd with --mysql_host=(*link)->inner_address() ...
//   ASSERT_TRUE((*link)->Drop().ok());
//   ASSERT_TRUE((*link)->Restore().ok());
#ifndef MSGQ_TESTS_NETNS_FIXTURE_H_
#define MSGQ_TESTS_NETNS_FIXTURE_H_

#include <sys/types.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {

class NetnsLink {
 public:
  // True when this process can make namespaces (root, `ip` and `tc`
  // found); otherwise false with the reason in *why.
  static bool Supported(std::string* why);
  // Sweeps stale namespaces, then makes a namespace with lo up and a veth
  // pair in a free /30 of 10.213.0.0/16, both ends up. INTERNAL with the
  // failing command's output; what was made is deleted again.
  static absl::StatusOr<std::unique_ptr<NetnsLink>> Create();
  ~NetnsLink();
  NetnsLink(const NetnsLink&) = delete;
  NetnsLink& operator=(const NetnsLink&) = delete;

  const std::string& name() const { return name_; }
  // The root namespace's end ("10.213.a.b") and the namespace's end.
  const std::string& host_address() const { return host_address_; }
  const std::string& inner_address() const { return inner_address_; }

  // Adds the side path (once; later calls return the same address) and
  // returns the inner namespace's address on it ("10.213.a.b"). The inner
  // namespace's default route stays the router: only this /30 uses the
  // side path. INTERNAL with the failing command's output.
  absl::StatusOr<std::string> AddSidePath();

  // Loses every packet on the link from now on, in both directions.
  // Idempotent. INTERNAL when tc fails.
  absl::Status Drop();
  // Ends a Drop(). Idempotent. INTERNAL when tc fails.
  absl::Status Restore();

  // `argv` run inside the namespace (ip netns exec NAME argv...), for
  // launch::ChildProcess::Start: ip execs the program itself, so the pid
  // is the program's.
  std::vector<std::string> Wrap(const std::vector<std::string>& argv) const;
  // A shell command run inside the namespace, for launch::RunCommand.
  std::string WrapCommand(const std::string& command) const;

  // Deletes namespaces and veth pairs whose owning test process is gone
  // (Create() calls it). Kills the processes still in such a namespace.
  static void SweepStale();

 private:
  NetnsLink() = default;
  // The namespaces, the two veth pairs in /29 `block` and the routes.
  absl::Status Plumb(const std::string& block);

  std::string name_;     // the inner namespace
  std::string router_;   // the namespace forwarding between the two
  std::string host_if_;  // root namespace's end
  std::vector<std::string> router_ifs_;  // the router's two ends
  std::string inner_if_;                 // the inner namespace's end
  std::string ifs_;                      // the interfaces' common prefix
  std::string side_if_;                  // the side path's root end
  std::string side_address_;             // the side path's inner end
  std::string host_address_;
  std::string inner_address_;
  bool created_ = false;
};

class NetnsMariaDb {
 public:
  // Starts a private MariaDB (binlog on, ROW) inside `link`'s namespace,
  // listening on link.inner_address() and its socket, with root allowed
  // from link.host_address() without a password. `extra_args` go to
  // mariadbd. INTERNAL with the launcher's output on failure.
  static absl::StatusOr<std::unique_ptr<NetnsMariaDb>> Start(
      const NetnsLink& link, const std::vector<std::string>& extra_args = {});
  // Kills the server (test data) and removes its directory.
  ~NetnsMariaDb();

  const std::string& socket() const { return socket_; }
  int port() const { return port_; }
  // msgqd's flags for the TCP path over the link.
  std::vector<std::string> MsgqdArgs() const;
  // The Unix socket (works during a drop).
  MysqlOptions socket_options() const;

  // SQL on the test's own socket connection (reconnecting when needed).
  absl::Status Exec(const std::string& sql);
  absl::StatusOr<QueryResult> Query(const std::string& sql);
  // The single value of a one-row, one-column query; "" on error.
  std::string Scalar(const std::string& sql);

 private:
  NetnsMariaDb() = default;
  std::string StopCommand() const;

  const NetnsLink* link_ = nullptr;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::string socket_;
  int port_ = 0;
  std::unique_ptr<MysqlConnection> conn_;
};

// The local ports of this (root) namespace's established TCP connections
// to `address`:`port` (from /proc/net/tcp): msgqd's MySQL connections over
// the link when msgqd runs in the root namespace.
std::set<int> EstablishedTo(const std::string& address, int port);

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_NETNS_FIXTURE_H_
