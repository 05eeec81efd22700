// GaleraNetnsCluster: a private three-node MariaDB Galera cluster
// (tests/galera_fixture.h) whose node 2 runs in a network namespace of the
// test's own (tests/netns_fixture.h), so the test can partition it from the
// other two.
//
// Nodes 0 and 1 listen on the root end of a NetnsLink; node 2 inside the
// namespace, on all of its addresses. Galera's traffic between node 2 and
// the others crosses the link's router, which Partition() makes lose every
// packet (no FIN, no RST) and Heal() restores. Node 2's SQL port stays
// reachable from this namespace over the link's side path (Node2Address()),
// as when only the database nodes' own network is cut; every node's Unix
// socket works throughout. MySQL's root may connect without a password from
// 10.213.0.0/16, the addresses of the namespaces this test made.
//
// Needs root, iproute2, galera-4: Supported() says why not, for a
// GTEST_SKIP. The destructor stops the nodes, then deletes the namespaces
// and veth pairs (also after a failed test).
//
// Not thread-safe: the test's thread drives it.
//
// Example:
//   std::string why;
//   if (!GaleraNetnsCluster::Supported(&why)) GTEST_SKIP() << why;
//   auto c = GaleraNetnsCluster::Start();
//   ASSERT_TRUE(c.ok()) << c.status();
//   ... msgqd with --mysql_host=(*c)->Hosts({2, 0, 1}) ...
//   ASSERT_TRUE((*c)->Partition().ok());
#ifndef MSGQ_TESTS_GALERA_NETNS_FIXTURE_H_
#define MSGQ_TESTS_GALERA_NETNS_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/galera_fixture.h"
#include "tests/netns_fixture.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {

class GaleraNetnsCluster {
 public:
  static bool Supported(std::string* why) { return NetnsLink::Supported(why); }
  // Makes the namespaces, starts the cluster (waiting until every node is
  // synced) and grants root from 10.213.0.0/16; creates database msgq.
  // INTERNAL with the failing command's or launcher's output.
  static absl::StatusOr<std::unique_ptr<GaleraNetnsCluster>> Start();
  ~GaleraNetnsCluster();
  GaleraNetnsCluster(const GaleraNetnsCluster&) = delete;
  GaleraNetnsCluster& operator=(const GaleraNetnsCluster&) = delete;

  GaleraCluster& cluster() { return *cluster_; }

  // "ADDRESS:PORT" by which this namespace reaches `node`: node 2's on the
  // side path, the others' GaleraCluster::Address().
  std::string Address(int node) const;
  // --mysql_host with every node, `order` first, as Address() names them.
  std::string Hosts(const std::vector<int>& order) const;
  // The node Address() names `address`, or -1.
  int NodeAt(const std::string& address) const;

  // Cuts node 2 from nodes 0 and 1 (every packet between them lost).
  absl::Status Partition() { return link_->Drop(); }
  // Ends a Partition(). Node 2 then rejoins by itself (IST).
  absl::Status Heal() { return link_->Restore(); }

  // A GLOBAL_STATUS value of `node` over its socket, e.g.
  // Status(2, "WSREP_CLUSTER_STATUS"); "" when it cannot be read.
  std::string Status(int node, const std::string& name);
  // Until `node` is Synced (wsrep_local_state 4) in the Primary component,
  // at most `timeout`.
  bool WaitSynced(int node, absl::Duration timeout);

 private:
  GaleraNetnsCluster() = default;
  absl::Status StartCluster();

  // Declared first: destroyed last, after the processes in its namespace.
  std::unique_ptr<NetnsLink> link_;
  std::string side_address_;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::unique_ptr<GaleraCluster> cluster_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_GALERA_NETNS_FIXTURE_H_
