// `msgq pause` and `msgq resume`: stop and restart sending a table.
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_common.h"
#include "msgq/client.h"

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
  CliCommand cmd(paused ? "pause" : "resume",
                 paused ? kPauseUsage : kResumeUsage,
                 CliCommand::Target::kTable, env, out, err);
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  if (cmd.positional().empty()) return cmd.UsageError("missing TABLE");
  if (cmd.positional().size() > 1) {
    return cmd.UsageError(
        absl::StrCat("unexpected argument '", cmd.positional()[1], "'"));
  }
  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  const TableRef table = cmd.table();
  absl::Status status = client->SetPaused(table, paused);
  if (!status.ok()) return cmd.Error(status);
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
