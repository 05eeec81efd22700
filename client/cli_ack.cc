// `msgq ack`: acknowledges messages by id.
#include <memory>
#include <optional>
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
  CliCommand cmd("ack", kAckUsage, CliCommand::Target::kTable, env, out, err);
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  const std::vector<std::string>& positional = cmd.positional();
  if (positional.empty()) return cmd.UsageError("missing TABLE");
  if (positional.size() < 2) return cmd.UsageError("missing ID");

  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  const std::vector<std::string> ids(positional.begin() + 1, positional.end());
  absl::StatusOr<int64_t> acked = client->Ack(cmd.table(), ids);
  if (!acked.ok()) return cmd.Error(acked.status());
  out << "acked " << *acked << " of " << ids.size() << "\n";
  out.flush();
  return kExitOk;
}

}  // namespace msgq
