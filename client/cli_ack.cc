// `msgq ack`: acknowledges messages by id.
#include <memory>
#include <vector>

#include "client/cli_common.h"
#include "client/client.h"

namespace msgq {
namespace {

constexpr char kAckUsage[] = R"(Usage: msgq ack TABLE ID... [flags]

Acknowledges the messages of TABLE with the given ids (as printed by
'msgq tail'), in one call, and prints "acked N of M", N being the messages
that went from unacked to acked (unknown and already-acked ids are not
errors). Use '--' before ids that start with '-'.

Flags:
)";

}  // namespace

int RunAck(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err, const CliEnvironment& env) {
  CommonFlags common{.server = env.default_server};
  std::string keyspace;
  FlagParser flags;
  AddCommonFlags(flags, &common);
  flags.AddString("keyspace", &keyspace, "K",
                  "keyspace (database) of TABLE; empty = the server's default");
  absl::StatusOr<std::vector<std::string>> positional = flags.Parse(args);
  if (!positional.ok()) {
    return ReportUsageError(err, "ack", positional.status().message());
  }
  if (flags.help()) {
    out << kAckUsage << flags.Usage();
    return kExitOk;
  }
  if (positional->empty()) return ReportUsageError(err, "ack", "missing TABLE");
  if (positional->size() < 2) return ReportUsageError(err, "ack", "missing ID");

  absl::StatusOr<std::unique_ptr<Client>> client = ConnectOne(common);
  if (!client.ok())
    return ReportUsageError(err, "ack", client.status().message());
  const TableRef table(keyspace, (*positional)[0]);
  const std::vector<std::string> ids(positional->begin() + 1,
                                     positional->end());
  absl::StatusOr<int64_t> acked = (*client)->Ack(table, ids);
  if (!acked.ok()) return ReportError(err, "ack", common, acked.status());
  out << "acked " << *acked << " of " << ids.size() << "\n";
  out.flush();
  return kExitOk;
}

}  // namespace msgq
