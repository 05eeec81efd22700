// ChildProcess: a program started by a tool or test (msgqd, perf), its
// stdout and stderr appended to a log file, its stdin /dev/null. The child
// runs in a process group of its own with no signals blocked, so a terminal's
// Ctrl-C reaches only the parent, which owns the child's shutdown. The child
// gets SIGKILL when the thread that started it exits (PR_SET_PDEATHSIG), so
// it never outlives a crashed, aborted or killed parent: start it from a
// thread that lives as long as the child should (normally the main thread).
// RunCommand: a shell command's stdout. ShellQuote: quoting for RunCommand.
//
// Not thread-safe: one owner drives a ChildProcess. The destructor stops a
// still-running child (SIGTERM, then SIGKILL after 10 s).
//
// Example:
//   auto child = ChildProcess::Start({"sleep", "60"}, "/tmp/sleep.log");
//   if (!child.ok()) return child.status();
//   int code = (*child)->Stop(SIGTERM, absl::Seconds(5));  // 128 + SIGTERM
#ifndef MSGQ_TOOLS_LAUNCH_CHILD_PROCESS_H_
#define MSGQ_TOOLS_LAUNCH_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace msgq::launch {

class ChildProcess {
 public:
  // Forks and execs argv[0] (searched in PATH). INTERNAL when fork fails;
  // an exec failure shows as exit status 127 and a line in the log.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // False once the child exited (reaps it without blocking).
  bool running();
  // Sends `sig` and waits up to `timeout` for the exit, then SIGKILLs and
  // waits. Returns the exit code, 128+signal when killed by a signal, -1 when
  // the child was reaped elsewhere. A child that already exited is not
  // signalled; its exit code is returned again.
  int Stop(int sig, absl::Duration timeout);
  // The log so far.
  std::string Log() const;

 private:
  ChildProcess(pid_t pid, std::string log_path)
      : pid_(pid), log_path_(std::move(log_path)) {}
  bool Reap(bool block);

  pid_t pid_;
  std::string log_path_;
  bool exited_ = false;
  int exit_code_ = 0;
};

// Runs `command` with /bin/sh and waits; returns its stdout (stderr is
// inherited unless the command redirects it). INTERNAL with the command, its
// wait status and its stdout when it exits non-zero or cannot be started.
absl::StatusOr<std::string> RunCommand(const std::string& command);

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s);

}  // namespace msgq::launch

#endif  // MSGQ_TOOLS_LAUNCH_CHILD_PROCESS_H_
