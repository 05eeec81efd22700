#include "client/cli.h"

#include "absl/strings/string_view.h"
#include "client/cli_common.h"

namespace msgq {
namespace {

constexpr absl::string_view kUsage =
    R"(Usage: msgq [--server=HOST:PORT] [--timeout=DURATION] COMMAND [ARGS...]

Talks to msgqd, which turns MySQL/MariaDB tables into message queues.

Commands:
  tables               list every message table: keyspace, name, loaded or
                       the error, settings, subscribers
  tail TABLE           print messages of TABLE as they arrive (a message sent
                       before shows epoch=N: ID:EPOCH names the delivery)
  ack TABLE ID...      acknowledge messages by id
  nack TABLE ID:EPOCH... [--delay=S] [--reason=TEXT] [--dead]
                       hand deliveries back: retry them (after S seconds or
                       the table's backoff), or mark them dead
  extend TABLE ID:EPOCH... --duration=S
                       keep deliveries from being resent for S seconds
  dead TABLE [--limit=N] [--after=ID]
                       list dead messages: id, epoch, when, last error
  redrive TABLE (ID...|--all)
                       send dead messages again
  pause TABLE          stop sending TABLE's messages (enqueueing and acks go
                       on; kept in MySQL, for every msgqd)
  resume TABLE         send TABLE's messages again
  groups list [TABLE] [--json]
  groups create TABLE GROUP [--from=earliest|latest|gtid:D-S-N]
                [--filter=EXPR]
  groups delete TABLE GROUP
                       consumer groups of a table: named, independent readers
                       (creating, listing, deleting; delivery is not built)
  stats [TABLE] [--watch] [--json] [--interval=D]
                       rates (sent/s, acked/s, ...) and depths per table
  help [COMMAND]       show this help, or a command's

Run 'msgq COMMAND --help' for a command's flags. --server and --timeout may
also follow the command. tables and tail take several servers (shards, or
instances sharing a database); the commands that take ids take exactly one,
the server the messages came from: ids are unique only within a shard.

Exit codes:
  0  success
  1  other error (e.g. the table failed to load, a malformed id)
  2  usage error
  3  server unreachable or not answering in time
  4  table not found
)";

using Command = int (*)(absl::Span<const std::string>, std::ostream&,
                        std::ostream&, const CliEnvironment&);

Command FindCommand(absl::string_view name) {
  if (name == "tables") return &RunTables;
  if (name == "tail") return &RunTail;
  if (name == "ack") return &RunAck;
  if (name == "nack") return &RunNack;
  if (name == "extend") return &RunExtend;
  if (name == "dead") return &RunDead;
  if (name == "redrive") return &RunRedrive;
  if (name == "stats") return &RunStats;
  if (name == "pause") return &RunPause;
  if (name == "resume") return &RunResume;
  if (name == "groups") return &RunGroups;
  return nullptr;
}

}  // namespace

int RunCli(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err, const CliEnvironment& env) {
  // Flags before the command are the common ones; they are handed on to the
  // command, which parses them again along with its own.
  CommonFlags common{.server = env.default_server};
  FlagParser flags;
  AddCommonFlags(flags, &common);
  absl::StatusOr<std::vector<std::string>> rest =
      flags.Parse(args, /*stop_at_positional=*/true);
  if (!rest.ok()) {
    err << "msgq: " << rest.status().message() << "\n"
        << "Run 'msgq --help' for usage.\n";
    return kExitUsage;
  }
  if (rest->empty()) {
    if (flags.help()) {
      out << kUsage;
      return kExitOk;
    }
    err << kUsage;
    return kExitUsage;
  }
  const std::string name = (*rest)[0];
  if (name == "help") {
    if (rest->size() == 1) {
      out << kUsage;
      return kExitOk;
    }
    Command command = FindCommand((*rest)[1]);
    if (command == nullptr) {
      err << "msgq: unknown command '" << (*rest)[1] << "'\n";
      return kExitUsage;
    }
    const std::vector<std::string> help_args = {"--help"};
    return command(help_args, out, err, env);
  }
  Command command = FindCommand(name);
  if (command == nullptr) {
    err << "msgq: unknown command '" << name << "'\n"
        << "Run 'msgq --help' for usage.\n";
    return kExitUsage;
  }
  const size_t consumed = args.size() - rest->size();
  std::vector<std::string> command_args(args.begin(), args.begin() + consumed);
  if (flags.help()) command_args.push_back("--help");
  command_args.insert(command_args.end(), rest->begin() + 1, rest->end());
  return command(command_args, out, err, env);
}

}  // namespace msgq
