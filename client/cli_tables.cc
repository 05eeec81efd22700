// `msgq tables`: lists the server's message tables.
#include <memory>
#include <vector>

#include "client/cli_common.h"
#include "client/cli_format.h"
#include "client/client.h"

namespace msgq {
namespace {

constexpr char kTablesUsage[] = R"(Usage: msgq tables [flags]

Lists every message table of the server's databases, loaded or not, one per
line with aligned columns: KEYSPACE, NAME, STATUS (loaded or error),
DISCOVERY (binlog or poll), SUBSCRIBERS, CACHED, IN_FLIGHT, DEAD ("-" until
counted: see "When work fails" in the README), and DETAILS (the settings of a
loaded table, or why it failed to load). With --json, prints
{"tables":[...]} using the field names of msgq.v1.TableStatus.

Flags:
)";

}  // namespace

int RunTables(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env) {
  CommonFlags common{.server = env.default_server};
  bool json = false;
  FlagParser flags;
  AddCommonFlags(flags, &common);
  flags.AddBool("json", &json, "print JSON instead of a table");
  absl::StatusOr<std::vector<std::string>> positional = flags.Parse(args);
  if (!positional.ok()) {
    return ReportUsageError(err, "tables", positional.status().message());
  }
  if (flags.help()) {
    out << kTablesUsage << flags.Usage();
    return kExitOk;
  }
  if (!positional->empty()) {
    return ReportUsageError(err, "tables",
                            "unexpected argument '" + (*positional)[0] + "'");
  }

  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(common.server, ClientOptions{.timeout = common.timeout});
  if (!client.ok())
    return ReportUsageError(err, "tables", client.status().message());
  absl::StatusOr<std::vector<v1::TableStatus>> tables = (*client)->ListTables();
  if (!tables.ok()) return ReportError(err, "tables", common, tables.status());
  out << (json ? FormatTablesJson(*tables) + "\n" : FormatTablesText(*tables));
  out.flush();
  return kExitOk;
}

}  // namespace msgq
