// PrivateMariaDb: a MariaDB server of the bench's own, started and stopped
// with tools/mariadb-private (the project's one launcher).
//
// Not thread-safe. The destructor stops the server if Stop() was not called.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_MARIADB_SERVER_H_
#define MSGQ_TOOLS_MSGQ_BENCH_MARIADB_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace msgq::bench {

class PrivateMariaDb {
 public:
  struct Options {
    std::string source_dir;  // holds tools/mariadb-private
    std::string dir;         // data, socket and logs
    bool durable = true;
    bool binlog = true;
    std::vector<std::string> extra_args;  // passed to mariadbd
  };
  // Starts the server; INTERNAL with the launcher's output on failure.
  static absl::StatusOr<std::unique_ptr<PrivateMariaDb>> Start(
      const Options& options);
  ~PrivateMariaDb();

  const std::string& socket() const { return socket_; }
  int port() const { return port_; }
  // Clean shutdown; idempotent.
  absl::Status Stop();

  // The command that stops the server in `dir` (for emergency cleanup).
  static std::string StopCommand(const Options& options);

 private:
  explicit PrivateMariaDb(Options options) : options_(std::move(options)) {}

  Options options_;
  std::string socket_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_MARIADB_SERVER_H_
