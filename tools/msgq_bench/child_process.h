// ChildProcess: a program the bench starts (msgqd, perf), its stdout and
// stderr appended to a log file. RunCommand: a shell command's stdout.
//
// Not thread-safe: one owner drives a ChildProcess. The destructor stops a
// still-running child (SIGTERM, then SIGKILL after 10 s).
#ifndef MSGQ_TOOLS_MSGQ_BENCH_CHILD_PROCESS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace msgq::bench {

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
  bool running();
  // Sends `sig` and waits up to `timeout` for the exit, then SIGKILLs.
  // Returns the exit code, 128+signal when killed by a signal.
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

// Runs `command` with /bin/sh; returns its stdout. INTERNAL with the exit
// code when it fails.
absl::StatusOr<std::string> RunCommand(const std::string& command);

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_CHILD_PROCESS_H_
