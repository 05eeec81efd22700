// `msgq stats`: rates and depths of the message tables, from two ListTables
// samples of every server taken --interval apart.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "client/cli_common.h"
#include "client/cli_stats_format.h"
#include "client/internal/messaging_calls.h"
#include "msgq/client.h"

namespace msgq {
namespace {

constexpr char kStatsUsage[] = R"(Usage: msgq stats [TABLE] [flags]

Samples every loaded table (or only TABLE) twice, --interval apart, and
prints per-second rates between the samples (SENT/S, ACKED/S, REDELIVERED/S,
NACKED/S, DIED/S) and the depths of the second (CACHED, IN_FLIGHT, DEAD,
SUBSCRIBERS), columns aligned. A counter that went down between the samples
(msgqd restarted) has no rate: "-" (null in JSON), never a negative one.
With several servers (--server=A,B,...) prints one row per (server, table)
with a SERVER column. --json prints one JSON object per sample pair, one per
line, with the counters too. --watch repeats until interrupted, each
interval's rates from the previous sample.

Flags:
)";

// One sample of every server; the first error ends it.
absl::StatusOr<std::vector<StatsSample>> Sample(
    const std::vector<std::unique_ptr<Client>>& clients,
    const std::vector<std::string>& servers, const CommonFlags& common,
    std::ostream& err, int* code) {
  std::vector<StatsSample> samples;
  for (size_t i = 0; i < clients.size(); ++i) {
    absl::StatusOr<std::vector<v1::TableStatus>> tables =
        internal::ListTablesCall(*clients[i]);
    if (!tables.ok()) {
      CommonFlags one = common;
      one.server = servers[i];
      *code = ReportError(err, "stats", one, tables.status());
      return tables.status();
    }
    samples.push_back({servers[i], *std::move(tables)});
  }
  return samples;
}

}  // namespace

int RunStats(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err, const CliEnvironment& env) {
  bool json = false;
  bool watch = false;
  absl::Duration interval = absl::Seconds(1);
  CliCommand cmd("stats", kStatsUsage, CliCommand::Target::kServers, env, out,
                 err);
  cmd.flags().AddBool("json", &json, "print one JSON object per sample");
  cmd.flags().AddBool("watch", &watch, "repeat until interrupted");
  cmd.flags().AddDuration("interval", &interval,
                          "time between the two samples");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  const std::vector<std::string>& positional = cmd.positional();
  if (positional.size() > 1) {
    return cmd.UsageError("unexpected argument '" + positional[1] + "'");
  }
  const std::string table = positional.empty() ? "" : positional[0];
  const CommonFlags& common = cmd.common();
  const std::vector<std::string> servers = ServerList(common);
  if (servers.empty()) return cmd.UsageError("empty --server");
  std::vector<std::unique_ptr<Client>> clients;
  for (const std::string& server : servers) {
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectTo(server, common);
    if (!client.ok()) return cmd.UsageError(client.status().message());
    clients.push_back(*std::move(client));
  }
  int code = kExitOk;
  absl::Time before_at = absl::Now();
  absl::StatusOr<std::vector<StatsSample>> before =
      Sample(clients, servers, common, err, &code);
  if (!before.ok()) return code;
  do {
    absl::SleepFor(interval);
    const absl::Time after_at = absl::Now();
    absl::StatusOr<std::vector<StatsSample>> after =
        Sample(clients, servers, common, err, &code);
    if (!after.ok()) return code;
    const absl::Duration elapsed = after_at - before_at;
    const std::vector<StatsRow> rows =
        ComputeStats(*before, *after, elapsed, table);
    out << (json ? FormatStatsJson(rows, elapsed) + "\n"
                 : FormatStatsText(rows, servers.size() > 1));
    if (watch && !json) out << "\n";
    out.flush();
    before = std::move(after);
    before_at = after_at;
  } while (watch);
  return kExitOk;
}

}  // namespace msgq
