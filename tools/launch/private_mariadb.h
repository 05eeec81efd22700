// PrivateMariaDb: a MariaDB server of a tool's or test's own, started,
// stopped and restarted with tools/mariadb-private (the project's one
// launcher) in a directory the caller owns.
//
// Not thread-safe. The destructor stops the server (clean shutdown) unless
// Stop() was called after the last successful start; it never removes `dir`.
//
// Example:
//   PrivateMariaDb::Options o;
//   o.source_dir = MSGQ_SOURCE_DIR;
//   o.dir = "/tmp/my-db";
//   auto db = PrivateMariaDb::Start(o);
//   if (!db.ok()) return db.status();
//   Connect to (*db)->socket() or 127.0.0.1:(*db)->port().
#ifndef MSGQ_TOOLS_LAUNCH_PRIVATE_MARIADB_H_
#define MSGQ_TOOLS_LAUNCH_PRIVATE_MARIADB_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace msgq::launch {

class PrivateMariaDb {
 public:
  struct Options {
    std::string source_dir;  // holds tools/mariadb-private
    std::string dir;         // data, socket and logs
    // innodb_flush_log_at_trx_commit=1 and sync_binlog=1 (else 2 and 0).
    bool durable = true;
    bool binlog = true;                   // ROW binlog
    std::vector<std::string> extra_args;  // passed to mariadbd
    // NAME=VALUE, set in mariadbd's environment only (the launcher's
    // --env), at every start and restart.
    std::vector<std::string> env;
    int port = 0;  // 0: a free port the launcher picks
    // The server is SIGKILLed within about a second of this process's exit,
    // however it exits (the launcher's --owner-pid watchdog), so a crash
    // never leaves it running.
    bool die_with_this_process = true;
    // With die_with_this_process: the process the server dies with, when
    // not this one (0: this one).
    int owner_pid = 0;
  };
  // Starts the server and waits until it accepts connections. INTERNAL with
  // the launcher's output when the launcher fails or prints no socket/port.
  static absl::StatusOr<std::unique_ptr<PrivateMariaDb>> Start(
      const Options& options);
  // The object for a server that Start() with the same `options` started
  // earlier (possibly in another process) and that still runs on `socket`
  // and `port`; it is stopped, restarted and destroyed like a started one.
  static std::unique_ptr<PrivateMariaDb> Adopt(const Options& options,
                                               std::string socket, int port);
  ~PrivateMariaDb();
  PrivateMariaDb(const PrivateMariaDb&) = delete;
  PrivateMariaDb& operator=(const PrivateMariaDb&) = delete;

  // The socket path and TCP port of the running (or last running) server.
  const std::string& socket() const { return socket_; }
  int port() const { return port_; }

  enum class StopMode {
    kClean,  // SIGTERM and wait: committed data survives
    kKill,   // SIGKILL: a crash, InnoDB recovers at the next start
  };
  // Stops the server; a no-op when already stopped. INTERNAL with the
  // launcher's output when the launcher fails.
  absl::Status Stop(StopMode mode = StopMode::kClean);
  // Starts the stopped server again with the same socket, data and options,
  // on the same port when it is still free and on another free one when it
  // was taken meanwhile (unless Options::port fixed it): read port() again
  // afterwards. INTERNAL as Start(); the server stays stopped then.
  absl::Status Restart();
  // Forgets the running server: the destructor leaves it running (for
  // another process to Adopt()).
  void Release() { stopped_ = true; }

  // The shell command that stops the server in `options.dir` (for emergency
  // cleanup from a signal handler thread, without the object).
  static std::string StopCommand(const Options& options,
                                 StopMode mode = StopMode::kClean);

 private:
  explicit PrivateMariaDb(Options options) : options_(std::move(options)) {}
  // Runs the launcher's start with options_ and reads socket_ and port_.
  absl::Status RunStart();

  Options options_;
  int last_port_ = 0;  // preferred by Restart()
  std::string socket_;
  int port_ = 0;
  bool stopped_ = true;
};

}  // namespace msgq::launch

#endif  // MSGQ_TOOLS_LAUNCH_PRIVATE_MARIADB_H_
