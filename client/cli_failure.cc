// The failure-handling commands of msgq: `nack`, `extend` (deliveries named
// ID:EPOCH), `dead` (list dead messages) and `redrive` (send them again).
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/cli_common.h"
#include "client/cli_format.h"
#include "client/internal/messaging_calls.h"
#include "msgq/client.h"

namespace msgq {
namespace {

constexpr char kNackUsage[] = R"(Usage: msgq nack TABLE ID:EPOCH... [flags]

Hands deliveries of TABLE back unprocessed, in one call: they are sent again
after --delay (default: the table's backoff for their epoch), or with --dead
they die at once. ID:EPOCH names a delivery as 'msgq tail' prints it:
"id=ID ... epoch=EPOCH", EPOCH being 0 when no epoch is printed. Only the
latest delivery of a message counts.
Prints "retried R, dead D of N". Use '--' before ids that start with '-'.

Flags:
)";

constexpr char kExtendUsage[] =
    R"(Usage: msgq extend TABLE ID:EPOCH... --duration=S [flags]

Keeps deliveries of TABLE (ID:EPOCH, as for 'msgq nack') from being sent to
anyone else for S seconds from now, in one call. Prints "extended N of M";
a delivery that is no longer the latest one counts 0.

Flags:
)";

constexpr char kDeadUsage[] = R"(Usage: msgq dead TABLE [flags]

Lists the dead messages of TABLE by id, one page at a time, with aligned
columns: ID, EPOCH (sends before it died), DIED (how long ago, or - when the
table has no time_dead column) and LAST_ERROR (- when none). When the page is
full, stderr says how to get the next one (--after=LAST_ID). With --json,
prints {"messages":[...]} (ids as strings, times in Unix nanoseconds).

Flags:
)";

constexpr char kRedriveUsage[] =
    R"(Usage: msgq redrive TABLE (ID... | --all) [flags]

Sends dead messages of TABLE again: they become due now with epoch 0. Prints
"redriven N of M" for ids (ids that are not dead count 0), or "redriven N"
with --all. Use '--' before ids that start with '-'.

Flags:
)";

// "ID:EPOCH", split at the last ':' (an id may contain ':').
absl::StatusOr<Delivery> ParseDelivery(absl::string_view text) {
  const size_t colon = text.rfind(':');
  int64_t epoch = -1;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(text.substr(colon + 1), &epoch) || epoch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ID:EPOCH (e.g. 17:0), got '", text, "'"));
  }
  return Delivery{std::string(text.substr(0, colon)), epoch};
}

// Parses positional[1..] as deliveries; nullopt after reporting a usage
// error (exit with kExitUsage).
std::optional<std::vector<Delivery>> ParseDeliveries(const CliCommand& cmd) {
  const std::vector<std::string>& positional = cmd.positional();
  if (positional.empty()) {
    cmd.UsageError("missing TABLE");
    return std::nullopt;
  }
  if (positional.size() < 2) {
    cmd.UsageError("missing ID:EPOCH");
    return std::nullopt;
  }
  std::vector<Delivery> deliveries;
  for (size_t i = 1; i < positional.size(); ++i) {
    absl::StatusOr<Delivery> d = ParseDelivery(positional[i]);
    if (!d.ok()) {
      cmd.UsageError(d.status().message());
      return std::nullopt;
    }
    deliveries.push_back(*std::move(d));
  }
  return deliveries;
}

}  // namespace

int RunNack(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err, const CliEnvironment& env) {
  NackParams params;
  CliCommand cmd("nack", kNackUsage, CliCommand::Target::kTable, env, out, err);
  cmd.flags().AddSeconds("delay", &params.delay,
                         "retry after S seconds (0 = as soon as possible); "
                         "default: the table's backoff");
  cmd.flags().AddString("reason", &params.reason, "TEXT",
                        "why; stored in the row's last_error column if any");
  cmd.flags().AddBool("dead", &params.dead, "dead now instead of a retry");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  std::optional<std::vector<Delivery>> deliveries = ParseDeliveries(cmd);
  if (!deliveries.has_value()) return kExitUsage;
  if (params.dead && params.delay.has_value()) {
    return cmd.UsageError("--delay and --dead exclude each other");
  }

  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  absl::StatusOr<NackResult> nacked =
      client->Nack(cmd.table(), *deliveries, params);
  if (!nacked.ok()) return cmd.Error(nacked.status());
  out << "retried " << nacked->retried << ", dead " << nacked->dead << " of "
      << deliveries->size() << "\n";
  out.flush();
  return kExitOk;
}

int RunExtend(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env) {
  std::optional<absl::Duration> duration;
  CliCommand cmd("extend", kExtendUsage, CliCommand::Target::kTable, env, out,
                 err);
  cmd.flags().AddSeconds("duration", &duration,
                         "keep them for S seconds from now (required, > 0)");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  std::optional<std::vector<Delivery>> deliveries = ParseDeliveries(cmd);
  if (!deliveries.has_value()) return kExitUsage;
  if (!duration.has_value()) return cmd.UsageError("missing --duration");
  if (*duration <= absl::ZeroDuration()) {
    return cmd.UsageError("--duration must be positive");
  }

  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  absl::StatusOr<int64_t> extended =
      client->Extend(cmd.table(), *deliveries, *duration);
  if (!extended.ok()) return cmd.Error(extended.status());
  out << "extended " << *extended << " of " << deliveries->size() << "\n";
  out.flush();
  return kExitOk;
}

int RunDead(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err, const CliEnvironment& env) {
  int64_t limit = 0;
  std::string after;
  bool json = false;
  CliCommand cmd("dead", kDeadUsage, CliCommand::Target::kTable, env, out, err);
  cmd.flags().AddCount("limit", &limit, "N",
                       "at most N messages; 0 = the server's default (100)");
  cmd.flags().AddString(
      "after", &after, "ID",
      "only ids after ID (the last one of the previous page)");
  cmd.flags().AddBool("json", &json, "print JSON instead of a table");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  const std::vector<std::string>& positional = cmd.positional();
  if (positional.empty()) return cmd.UsageError("missing TABLE");
  if (positional.size() > 1) {
    return cmd.UsageError("unexpected argument '" + positional[1] + "'");
  }
  if (limit > std::numeric_limits<int32_t>::max()) {
    return cmd.UsageError(absl::StrCat("--limit ", limit, " is too large"));
  }

  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  absl::StatusOr<std::vector<v1::DeadMessage>> dead = internal::ListDeadCall(
      *client, cmd.table(), static_cast<int32_t>(limit), after);
  if (!dead.ok()) return cmd.Error(dead.status());
  out << (json ? FormatDeadJson(*dead) + "\n"
               : FormatDeadText(*dead, absl::Now()));
  out.flush();
  const size_t page = limit == 0 ? 100 : static_cast<size_t>(limit);
  if (!dead->empty() && dead->size() >= page) {
    err << "msgq dead: more may follow: --after=" << dead->back().id() << "\n";
  }
  return kExitOk;
}

int RunRedrive(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err, const CliEnvironment& env) {
  bool all = false;
  CliCommand cmd("redrive", kRedriveUsage, CliCommand::Target::kTable, env, out,
                 err);
  cmd.flags().AddBool("all", &all, "every dead message of TABLE");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  const std::vector<std::string>& positional = cmd.positional();
  if (positional.empty()) return cmd.UsageError("missing TABLE");
  if (all && positional.size() > 1) {
    return cmd.UsageError("give ids or --all, not both");
  }
  if (!all && positional.size() < 2) {
    return cmd.UsageError("missing ID (or --all)");
  }

  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  const TableRef table = cmd.table();
  const std::vector<std::string> ids(positional.begin() + 1, positional.end());
  absl::StatusOr<int64_t> redriven =
      all ? client->RedriveAll(table) : client->Redrive(table, ids);
  if (!redriven.ok()) return cmd.Error(redriven.status());
  out << "redriven " << *redriven;
  if (!all) out << " of " << ids.size();
  out << "\n";
  out.flush();
  return kExitOk;
}

}  // namespace msgq
