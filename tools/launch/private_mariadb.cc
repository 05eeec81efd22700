#include "tools/launch/private_mariadb.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/launch/child_process.h"

namespace msgq::launch {
namespace {

std::string Launcher(const PrivateMariaDb::Options& o) {
  return ShellQuote(absl::StrCat(o.source_dir, "/tools/mariadb-private"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrivateMariaDb>> PrivateMariaDb::Start(
    const Options& options) {
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb(options));
  if (absl::Status s = db->RunStart(); !s.ok()) return s;
  return db;
}

std::unique_ptr<PrivateMariaDb> PrivateMariaDb::Adopt(const Options& options,
                                                      std::string socket,
                                                      int port) {
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb(options));
  db->socket_ = std::move(socket);
  db->port_ = port;
  db->last_port_ = port;
  db->stopped_ = false;
  return db;
}

absl::Status PrivateMariaDb::RunStart() {
  std::string cmd =
      absl::StrCat(Launcher(options_), " start ", ShellQuote(options_.dir));
  if (options_.port != 0) {
    absl::StrAppend(&cmd, " --port=", options_.port);
  } else if (last_port_ != 0) {
    absl::StrAppend(&cmd, " --port=", last_port_, " --port-fallback");
  }
  if (options_.die_with_this_process) {
    absl::StrAppend(&cmd, " --owner-pid=",
                    options_.owner_pid != 0 ? options_.owner_pid : getpid());
  }
  if (options_.durable) absl::StrAppend(&cmd, " --durable");
  absl::StrAppend(&cmd, " --binlog=", options_.binlog ? "on" : "off");
  for (const std::string& e : options_.env) {
    absl::StrAppend(&cmd, " ", ShellQuote(absl::StrCat("--env=", e)));
  }
  if (!options_.extra_args.empty()) {
    absl::StrAppend(&cmd, " --");
    for (const std::string& a : options_.extra_args) {
      absl::StrAppend(&cmd, " ", ShellQuote(a));
    }
  }
  absl::StatusOr<std::string> out = RunCommand(cmd);
  if (!out.ok()) return out.status();
  std::string socket;
  int port = 0;
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_SOCKET=")) {
      socket = std::string(line);
    } else if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_PORT=")) {
      (void)absl::SimpleAtoi(line, &port);
    }
  }
  if (socket.empty() || port == 0) {
    return absl::InternalError(
        absl::StrCat("mariadb-private printed no socket or port: ", *out));
  }
  socket_ = std::move(socket);
  port_ = port;
  // Restart() prefers the port, so the address usually stays the same.
  last_port_ = port_;
  stopped_ = false;
  return absl::OkStatus();
}

PrivateMariaDb::~PrivateMariaDb() { (void)Stop(); }

absl::Status PrivateMariaDb::Stop(StopMode mode) {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  return RunCommand(StopCommand(options_, mode)).status();
}

absl::Status PrivateMariaDb::Restart() { return RunStart(); }

std::string PrivateMariaDb::StopCommand(const Options& options, StopMode mode) {
  return absl::StrCat(Launcher(options), " stop ", ShellQuote(options.dir),
                      mode == StopMode::kKill ? " --kill" : "");
}

}  // namespace msgq::launch
