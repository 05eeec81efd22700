// Cluster: the campaign's private MariaDB (durable: flush at every commit,
// sync_binlog=1, ROW binlog) and its msgqd, with the faults the campaign
// injects. msgqd is restarted on the addresses its first run picked (gRPC,
// and the HTTP and MySQL-protocol ports when they are on), so clients
// reconnect to the same place; each msgqd run logs to a file of its own
// (work_dir/msgqd-NNN.log).
//
// Not thread-safe: the campaign's main thread drives it. Every fault returns
// with both processes running again (or an error when one does not come
// back), and records its window in the Ledger.
#ifndef MSGQ_TOOLS_CHAOS_CLUSTER_H_
#define MSGQ_TOOLS_CHAOS_CLUSTER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_connection.h"
#include "tools/chaos/ledger.h"
#include "tools/launch/msgqd_process.h"
#include "tools/launch/private_mariadb.h"

namespace msgq::chaos {

class Cluster {
 public:
  struct Options {
    std::string source_dir;  // holds tools/mariadb-private
    std::string msgqd_path;
    std::string work_dir;
    std::vector<std::string> msgqd_args;
    std::vector<std::string> setup_sql;  // run before msgqd starts
    // When set, holds the running msgqd's pid (for a signal handler thread).
    std::atomic<int>* msgqd_pid = nullptr;
  };

  // Starts MariaDB, runs setup_sql, starts msgqd.
  static absl::StatusOr<std::unique_ptr<Cluster>> Start(Options options,
                                                        Ledger* ledger);
  ~Cluster();

  const std::string& address() const { return address_; }
  // HOST:PORT of the HTTP and MySQL-protocol ports, from the first run's
  // "msgqd http on" and "msgqd mysql protocol on" lines; empty when off.
  const std::string& http_address() const { return http_address_; }
  const std::string& mysql_protocol_address() const {
    return mysql_protocol_address_;
  }
  MysqlOptions mysql() const;
  // Runs `sql` on the control connection (reconnecting as needed).
  absl::StatusOr<QueryResult> Query(const std::string& sql);

  // Each fault returns once the processes are back (or with the error that
  // kept one from coming back).
  absl::Status KillMsgqd(absl::Duration down);
  absl::Status RestartMariaDb(bool kill, absl::Duration down);
  absl::Status StopMsgqd(absl::Duration stopped);  // SIGSTOP .. SIGCONT
  // A host crash: kill -9 of msgqd and MariaDB together; msgqd comes back
  // first (without MySQL), MariaDB `down` later.
  absl::Status CrashBoth(absl::Duration down);
  // Runs `alter` (a comment change) and records a reload window of
  // `reload_within` (msgqd's --schema_reload_interval plus slack).
  absl::Status ReloadTable(const std::string& alter,
                           absl::Duration reload_within);
  // KILLs the Binlog Dump connections; NOT_FOUND when there was none.
  absl::Status KillDumpThread();

  // Records a violation and restarts msgqd when it exited by itself.
  absl::Status CheckMsgqdAlive();
  // SIGTERM; returns msgqd's exit code.
  int StopMsgqdCleanly();
  int msgqd_starts() const { return msgqd_starts_; }

 private:
  Cluster(Options options, Ledger* ledger)
      : options_(std::move(options)), ledger_(ledger) {}
  absl::Status StartMsgqd();

  const Options options_;
  Ledger* const ledger_;
  std::unique_ptr<launch::PrivateMariaDb> db_;
  std::unique_ptr<launch::MsgqdProcess> msgqd_;
  std::unique_ptr<MysqlConnection> control_;
  std::string address_;
  std::string http_address_;
  std::string mysql_protocol_address_;
  int msgqd_starts_ = 0;
};

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_CLUSTER_H_
