// MsgqdProcess: an msgqd the bench starts as a separate process, listening on
// a free loopback port. WaitForTable: blocks until any msgqd (ours or a given
// one) has loaded a message table.
//
// Not thread-safe. The destructor stops msgqd (SIGTERM) if still running.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_MSGQD_PROCESS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_MSGQD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "msgq/v1/messaging.pb.h"
#include "tools/msgq_bench/child_process.h"

namespace msgq::bench {

class MsgqdProcess {
 public:
  struct Options {
    std::string path;
    std::string mysql_socket;
    std::string database;
    std::vector<std::string> extra_args;
    std::string log_path;
  };
  // Starts msgqd and waits (up to 30 s) for its "msgqd listening on" line.
  // UNAVAILABLE with the log's tail when it exits or never listens.
  static absl::StatusOr<std::unique_ptr<MsgqdProcess>> Start(
      const Options& options);

  const std::string& address() const { return address_; }
  pid_t pid() const { return child_->pid(); }
  // SIGTERM and wait; returns the exit code.
  int Stop();

 private:
  explicit MsgqdProcess(std::unique_ptr<ChildProcess> child)
      : child_(std::move(child)) {}

  std::unique_ptr<ChildProcess> child_;
  std::string address_;
};

// Polls ListTables on `address` until `keyspace`.`table` is loaded.
// DEADLINE_EXCEEDED after `timeout`; FAILED_PRECONDITION with msgqd's error
// when the table is listed but failed to load and stays so.
absl::StatusOr<v1::TableStatus> WaitForTable(const std::string& address,
                                             const std::string& keyspace,
                                             const std::string& table,
                                             absl::Duration timeout);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_MSGQD_PROCESS_H_
