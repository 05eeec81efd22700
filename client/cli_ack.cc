// `msgq ack`: acknowledges messages by id.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "client/cli_common.h"
#include "msgq/client.h"

namespace msgq {
namespace {

constexpr char kAckUsage[] = R"(Usage: msgq ack TABLE ID... [flags]

Acknowledges the messages of TABLE with the given ids (as printed by
'msgq tail'), in one call, and prints "acked N of M", N being the messages
that went from unacked to acked. Ids that were already acked or are not in
the table are not errors (exit 0); the server counts them together, so the
line says so: "already acked or not in TABLE: ID..." when none went from
unacked to acked, else "acked N of M; the other K were already acked or
are not in TABLE". Use '--' before ids that start with '-'. With --group
NAME the acks are consumer group NAME's alone, and N counts the ids pending
for that group.

Flags:
)";

}  // namespace

int RunAck(absl::Span<const std::string> args, std::ostream& out,
           std::ostream& err, const CliEnvironment& env) {
  std::string group;
  CliCommand cmd("ack", kAckUsage, CliCommand::Target::kTable, env, out, err);
  cmd.flags().AddString("group", &group, "NAME",
                        "ack for consumer group NAME; empty = the default "
                        "group");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  const std::vector<std::string>& positional = cmd.positional();
  if (positional.empty()) return cmd.UsageError("missing TABLE");
  if (positional.size() < 2) return cmd.UsageError("missing ID");

  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  const std::vector<std::string> ids(positional.begin() + 1, positional.end());
  absl::StatusOr<int64_t> acked = client->Ack(cmd.table(), ids, group);
  if (!acked.ok()) return cmd.Error(acked.status());
  const int64_t asked = static_cast<int64_t>(ids.size());
  const std::string table = cmd.table().ToString();
  if (*acked >= asked) {
    out << "acked " << *acked << " of " << asked << "\n";
  } else if (*acked == 0) {
    out << "already acked or not in " << table << ": "
        << absl::StrJoin(ids, " ") << "\n";
  } else {
    const int64_t other = asked - *acked;
    out << "acked " << *acked << " of " << asked << "; the other " << other
        << (other == 1 ? " was already acked or is not in "
                       : " were already acked or are not in ")
        << table << "\n";
  }
  out.flush();
  return kExitOk;
}

}  // namespace msgq
