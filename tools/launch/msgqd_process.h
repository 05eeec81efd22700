// MsgqdProcess: an msgqd started as a separate process, listening on a free
// loopback port (--listen=127.0.0.1:0), its stdout and stderr in a log file.
// The HTTP and MySQL-protocol listeners are off unless `args` turn them on
// (e.g. --http_listen=127.0.0.1:0).
//
// Not thread-safe. The destructor stops a still-running msgqd (SIGTERM, then
// SIGKILL after 10 s).
//
// Example:
//   MsgqdProcess::Options o;
//   o.path = "build/server/msgqd";
//   o.mysql_socket = db->socket();
//   o.args = {"--databases=app"};
//   o.log_path = "/tmp/msgqd.log";
//   auto msgqd = MsgqdProcess::Start(o);
//   if (!msgqd.ok()) return msgqd.status();
//   Connect to (*msgqd)->address(); (*msgqd)->Stop() returns 0 on a clean exit.
#ifndef MSGQ_TOOLS_LAUNCH_MSGQD_PROCESS_H_
#define MSGQ_TOOLS_LAUNCH_MSGQD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/launch/child_process.h"

namespace msgq::launch {

class MsgqdProcess {
 public:
  struct Options {
    std::string path;          // the msgqd binary
    std::string mysql_socket;  // passed as --mysql_socket
    // Passed after --mysql_socket and --listen (a later flag wins).
    std::vector<std::string> args;
    // NAME=VALUE, set for msgqd only (it is started through env(1), which
    // execs it: the pid is msgqd's).
    std::vector<std::string> env;
    std::string log_path;  // appended to; created when missing
    // How long Start() waits for the listening line.
    absl::Duration start_timeout = absl::Seconds(30);
  };
  // Starts msgqd and waits for its "msgqd listening on HOST:PORT" line.
  // INTERNAL when the log cannot be opened or fork fails; UNAVAILABLE with
  // the log's tail when msgqd exits or does not listen within
  // `start_timeout` (it is stopped then).
  static absl::StatusOr<std::unique_ptr<MsgqdProcess>> Start(
      const Options& options);

  // HOST:PORT from the listening line.
  const std::string& address() const { return address_; }
  pid_t pid() const { return child_->pid(); }
  // `sig` (SIGTERM or SIGINT for a clean stop), then SIGKILL after
  // `timeout`; waits for the exit and returns the exit code (128+signal when
  // killed by a signal). After the first exit, returns the same code without
  // signalling.
  int Stop(absl::Duration timeout = absl::Seconds(15), int sig = SIGTERM);
  // SIGKILL (no cleanup) and wait.
  void Kill();
  // What msgqd wrote so far.
  std::string Log() const { return child_->Log(); }

 private:
  explicit MsgqdProcess(std::unique_ptr<ChildProcess> child)
      : child_(std::move(child)) {}

  std::unique_ptr<ChildProcess> child_;
  std::string address_;
};

}  // namespace msgq::launch

#endif  // MSGQ_TOOLS_LAUNCH_MSGQD_PROCESS_H_
