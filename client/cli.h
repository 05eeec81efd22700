// The msgq command-line tool: `msgq tables`, `msgq tail`, `msgq ack`, and
// for failures `msgq nack`, `msgq extend`, `msgq dead`, `msgq redrive`.
//
// RunCli is the whole tool behind main(), taking its streams as parameters so
// tests can run it in-process against a fake server.
//
// Exit codes (also in `msgq --help`):
//   0  success
//   1  any other error (e.g. the table failed to load, a malformed id)
//   2  usage error (unknown command or flag, missing argument)
//   3  server unreachable or not answering in time
//   4  table not found
//
// Example:
//   int main(int argc, char** argv) {
//     std::vector<std::string> args(argv + 1, argv + argc);
//     return msgq::RunCli(args, std::cout, std::cerr, {});
//   }
//
// Thread-compatible: one RunCli at a time per pair of streams.
#ifndef MSGQ_CLIENT_CLI_H_
#define MSGQ_CLIENT_CLI_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace msgq {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;
inline constexpr int kExitNotFound = 4;

struct CliEnvironment {
  // Default of --server; RunCli's caller fills it from $MSGQ_SERVER if set.
  std::string default_server = "127.0.0.1:15999";
  // When true, `tail` stops cleanly (flushing acks, exit 0) on SIGINT, SIGTERM
  // or SIGHUP: it blocks those signals (and SIGUSR1, used internally) in the
  // calling thread before starting any thread, so RunCli must be called
  // before the process has other threads that leave them unblocked.
  bool handle_signals = false;
};

// Runs the tool with `args` (argv without the program name). Writes results
// to `out` and diagnostics to `err`; returns the exit code.
int RunCli(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err, const CliEnvironment& env);

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLI_H_
