#include "tools/msgq_bench/mariadb_server.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/msgq_bench/child_process.h"

namespace msgq::bench {
namespace {

std::string Launcher(const PrivateMariaDb::Options& o) {
  return ShellQuote(absl::StrCat(o.source_dir, "/tools/mariadb-private"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrivateMariaDb>> PrivateMariaDb::Start(
    const Options& options) {
  std::unique_ptr<PrivateMariaDb> db(new PrivateMariaDb(options));
  std::string cmd =
      absl::StrCat(Launcher(options), " start ", ShellQuote(options.dir));
  if (options.durable) absl::StrAppend(&cmd, " --durable");
  absl::StrAppend(&cmd, " --binlog=", options.binlog ? "on" : "off");
  if (!options.extra_args.empty()) {
    absl::StrAppend(&cmd, " --");
    for (const std::string& a : options.extra_args) {
      absl::StrAppend(&cmd, " ", ShellQuote(a));
    }
  }
  absl::StatusOr<std::string> out = RunCommand(cmd);
  if (!out.ok()) return out.status();
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_SOCKET=")) {
      db->socket_ = std::string(line);
    } else if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_PORT=")) {
      (void)absl::SimpleAtoi(line, &db->port_);
    }
  }
  if (db->socket_.empty()) {
    db->stopped_ = true;
    return absl::InternalError(
        absl::StrCat("mariadb-private printed no socket: ", *out));
  }
  return db;
}

PrivateMariaDb::~PrivateMariaDb() { (void)Stop(); }

absl::Status PrivateMariaDb::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  return RunCommand(StopCommand(options_)).status();
}

std::string PrivateMariaDb::StopCommand(const Options& options) {
  return absl::StrCat(Launcher(options), " stop ", ShellQuote(options.dir));
}

}  // namespace msgq::bench
