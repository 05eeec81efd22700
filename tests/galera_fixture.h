// Helpers for the tests of msgqd on a MariaDB Galera cluster (docs/galera.md):
//
//   GaleraCluster   a private cluster of three nodes on loopback, started
//                   with tools/mariadb-galera in a directory of the test's
//                   own; kill -9 and restart of one node.
//   GaleraMsgqd     msgqd given the cluster's nodes (--mysql_host=a,b,c).
//   GaleraProducer  inserts ids first, first+1, ... into a table on one
//                   node at a steady pace and records what committed.
//
// Nodes are numbered 0..size()-1 here (tools/mariadb-galera's node I is
// node I-1). Everything stops in its destructor (the nodes also die within
// about a second of this process's death: the launcher's watchdog).
// Thread-safety: GaleraProducer's accessors from any thread; the rest from
// the test's thread only.
#ifndef MSGQ_TESTS_GALERA_FIXTURE_H_
#define MSGQ_TESTS_GALERA_FIXTURE_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_connection.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {

class GaleraCluster {
 public:
  struct StartOptions {
    int nodes = 3;
    // Node -> the address it listens on (tools/mariadb-galera --address;
    // 127.0.0.1 for a node not named).
    std::map<int, std::string> addresses;
    // Node -> a command its mariadbd runs under, e.g. "ip netns exec NS"
    // (--prefix).
    std::map<int, std::string> prefixes;
    // Passed to every node's mariadbd, after the launcher's own options.
    std::vector<std::string> mariadbd_args;
  };
  // Starts the cluster and waits until every node is synced. INTERNAL with
  // the launcher's output when it fails.
  static absl::StatusOr<std::unique_ptr<GaleraCluster>> Start(int nodes = 3);
  static absl::StatusOr<std::unique_ptr<GaleraCluster>> Start(
      const StartOptions& options);
  ~GaleraCluster();  // SIGKILLs every node, removes the directory
  GaleraCluster(const GaleraCluster&) = delete;
  GaleraCluster& operator=(const GaleraCluster&) = delete;

  int size() const { return static_cast<int>(ports_.size()); }
  int port(int node) const { return ports_[node]; }
  // "ADDRESS:PORT" of `node` (127.0.0.1 unless Options::addresses named
  // another), as msgqd logs it.
  std::string Address(int node) const;
  // --mysql_host for msgqd: every node, `order` first (the others after in
  // their order), e.g. Hosts({1}) = "node1,node0,node2".
  std::string Hosts(const std::vector<int>& order = {}) const;
  // The node whose address is `address` ("ADDRESS:PORT"), or -1.
  int NodeAt(const std::string& address) const;

  // Over `node`'s Unix socket, as root.
  MysqlOptions Options(int node) const;
  absl::StatusOr<std::unique_ptr<MysqlConnection>> Connect(int node) const;
  // On the test's own connection to `node` (reconnecting when needed).
  absl::StatusOr<QueryResult> Query(int node, const std::string& sql);
  absl::Status Exec(int node, const std::string& sql);
  // The single value of a one-row, one-column query ("" on error).
  std::string Scalar(int node, const std::string& sql);

  // SIGKILL of `node` (the others go on without it).
  absl::Status Kill(int node);
  // Starts the killed `node` again (it rejoins by IST).
  absl::Status Restart(int node);

 private:
  GaleraCluster() = default;
  std::string Launcher(const std::string& command) const;
  absl::Status ReadEnv(const std::string& out);

  std::unique_ptr<launch::OwnedDir> dir_;
  std::vector<std::string> sockets_;
  std::vector<int> ports_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<MysqlConnection>> conns_;
};

class GaleraMsgqd {
 public:
  // msgqd with --mysql_host=`hosts` (no socket), --databases=msgq, a short
  // schema reload interval, and `args`, waiting for its listening line.
  static absl::StatusOr<std::unique_ptr<GaleraMsgqd>> Start(
      const std::string& hosts, const std::vector<std::string>& args);
  ~GaleraMsgqd();  // SIGTERM, then SIGKILL

  pid_t pid() const { return process_->pid(); }
  // HOST:PORT it listens on (pass --listen=HOST:PORT to come back on it).
  const std::string& address() const { return process_->address(); }
  // SIGKILL, and waits for the exit.
  void Kill() { process_->Kill(); }
  std::unique_ptr<v1::Messaging::Stub> Stub() const;
  std::string Log() const { return process_->Log(); }
  // The server the last "MySQL primary: HOST:PORT" line names ("" none).
  std::string ServedNode() const;
  // When msgqd wrote its first log line containing `text` whose time is
  // not before `after` (to the millisecond its text log shows, so up to
  // 1 ms before the line was written); nullopt when there is none yet.
  std::optional<absl::Time> LoggedAt(absl::string_view text,
                                     absl::Time after) const;

 private:
  GaleraMsgqd() = default;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::unique_ptr<launch::MsgqdProcess> process_;
  std::shared_ptr<grpc::Channel> channel_;
};

class GaleraProducer {
 public:
  // Starts inserting ids first, first+1, ... into msgq.`table` on `node`,
  // one per `every`; after a failed INSERT it reconnects and goes on with
  // the next id (a failed one may or may not have committed).
  GaleraProducer(const GaleraCluster& cluster, int node,
                 const std::string& table, int first, absl::Duration every);
  ~GaleraProducer();  // Stop()
  void Stop();
  // Ids whose INSERT returned OK.
  std::set<std::string> committed() const;
  // Id -> when its INSERT returned OK.
  std::map<std::string, absl::Time> committed_at() const;
  int failures() const;

 private:
  void Run(MysqlOptions options, std::string table, int first,
           absl::Duration every);

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> committed_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> committed_at_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_GALERA_FIXTURE_H_
