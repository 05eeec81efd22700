// `msgq pause` and `msgq resume`: stop and restart sending a table.
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_common.h"
#include "client/client.h"

namespace msgq {
namespace {

constexpr char kPauseUsage[] = R"(Usage: msgq pause TABLE [flags]

Stops sending the messages of TABLE, on every msgqd serving it: enqueueing
goes on, acks, nacks and extends still work, and messages already sent keep
their ack wait. The state is kept in MySQL (table msgq_paused of the first
served database), so it survives restarts; other msgqd instances apply it
within their --schema_reload_interval. 'msgq tables' shows the table as
paused. Pausing a paused table is not an error. Prints "paused TABLE".

Flags:
)";

constexpr char kResumeUsage[] = R"(Usage: msgq resume TABLE [flags]

Sends the messages of TABLE again after 'msgq pause' (the backlog first, in
the usual order). Resuming a table that is not paused is not an error.
Prints "resumed TABLE".

Flags:
)";

int RunSetPaused(absl::Span<const std::string> args, std::ostream& out,
                 std::ostream& err, const CliEnvironment& env, bool paused) {
  const char* command = paused ? "pause" : "resume";
  CommonFlags common{.server = env.default_server};
  std::string keyspace;
  FlagParser flags;
  AddCommonFlags(flags, &common);
  flags.AddString("keyspace", &keyspace, "K",
                  "keyspace (database) of TABLE; empty = the server's default");
  absl::StatusOr<std::vector<std::string>> positional = flags.Parse(args);
  if (!positional.ok()) {
    return ReportUsageError(err, command, positional.status().message());
  }
  if (flags.help()) {
    out << (paused ? kPauseUsage : kResumeUsage) << flags.Usage();
    return kExitOk;
  }
  if (positional->empty()) {
    return ReportUsageError(err, command, "missing TABLE");
  }
  if (positional->size() > 1) {
    return ReportUsageError(
        err, command,
        absl::StrCat("unexpected argument '", (*positional)[1], "'"));
  }
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectOne(common);
  if (!client.ok()) {
    return ReportUsageError(err, command, client.status().message());
  }
  const TableRef table(keyspace, (*positional)[0]);
  absl::Status status = (*client)->SetPaused(table, paused);
  if (!status.ok()) return ReportError(err, command, common, status);
  out << (paused ? "paused " : "resumed ") << table.ToString() << "\n";
  out.flush();
  return kExitOk;
}

}  // namespace

int RunPause(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err, const CliEnvironment& env) {
  return RunSetPaused(args, out, err, env, /*paused=*/true);
}

int RunResume(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env) {
  return RunSetPaused(args, out, err, env, /*paused=*/false);
}

}  // namespace msgq
