// `msgq tables`: lists the server's message tables.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/cli_common.h"
#include "client/cli_format.h"
#include "client/internal/messaging_calls.h"
#include "msgq/client.h"

namespace msgq {
namespace {

constexpr char kTablesUsage[] = R"(Usage: msgq tables [flags]

Lists every message table of the server's databases, loaded or not, one per
line with aligned columns: KEYSPACE, NAME, STATUS (loaded, paused: see
'msgq pause', or error),
DISCOVERY (binlog or poll), SUBSCRIBERS, CACHED, IN_FLIGHT, DEAD ("-" until
counted: see docs/tables.md#dead-letters-seeing-and-steering), and DETAILS
(the settings of a loaded table, with msgq_concurrency_by also
"keys_at_limit=K": keys with msgq_concurrency messages in flight now; or
why it failed to load). With --json,
prints
{"tables":[...]} using the field names of msgq.v1.TableStatus.

With several servers (--server=A,B,...: shards, or instances sharing a
database), asks each and prints one row per (server, table) with two more
columns: SERVER first, and OWNER after STATUS: the table's lease state as
that server sees it ("off": leases disabled, that server sends; "owner",
"standby", "unknown"), followed by ":INSTANCE" when a lease holder is known.
With --json, prints {"servers":[{"server":"A","tables":[...]},...]}. A server
that does not answer is reported on stderr, the others are still printed,
and the exit code is that of the first failure.

Flags:
)";

std::string Owner(const v1::Ownership& ownership) {
  std::string state = ownership.state().empty() ? "-" : ownership.state();
  if (ownership.owner().empty()) return state;
  return absl::StrCat(state, ":", ownership.owner());
}

struct ServerTables {
  std::string server;
  std::vector<v1::TableStatus> tables;
};

// The DETAILS cell: the settings of a loaded table, then, with
// msgq_concurrency_by, the limit and how many keys are at it now.
std::string Details(const v1::TableStatus& t) {
  std::string details = FormatSettings(t.settings());
  if (t.settings().concurrency() > 0) {
    absl::StrAppend(&details, details.empty() ? "" : " ",
                    "concurrency_by=", t.settings().concurrency_by(),
                    " concurrency=", t.settings().concurrency(),
                    " keys_at_limit=", t.keys_at_limit());
  }
  return details;
}

// The tables as aligned text; with `several`, SERVER first and OWNER after
// STATUS (with one server, the columns of FormatTablesText).
std::string FormatServerTablesText(const std::vector<ServerTables>& servers,
                                   bool several = true) {
  std::string out;
  // Built cell by cell rather than from FormatTablesText's lines so columns
  // stay aligned across servers.
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"SERVER", "KEYSPACE", "NAME", "STATUS", "OWNER", "DISCOVERY",
                  "SUBSCRIBERS", "CACHED", "IN_FLIGHT", "DEAD", "DETAILS"});
  for (const ServerTables& s : servers) {
    for (const v1::TableStatus& t : s.tables) {
      if (t.loaded()) {
        rows.push_back(
            {s.server, t.keyspace(), t.name(), t.paused() ? "paused" : "loaded",
             Owner(t.ownership()), t.discovery().empty() ? "-" : t.discovery(),
             absl::StrCat(t.subscribers()), absl::StrCat(t.cached()),
             absl::StrCat(t.in_flight()),
             t.dead() < 0 ? "-" : absl::StrCat(t.dead()), Details(t)});
      } else {
        rows.push_back(
            {s.server, t.keyspace(), t.name(), "error", Owner(t.ownership()),
             "-", absl::StrCat(t.subscribers()), "-", "-", "-", t.error()});
      }
    }
  }
  if (!several) {
    for (auto& row : rows) {
      row.erase(row.begin() + 4);  // OWNER
      row.erase(row.begin());      // SERVER
    }
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i + 1 == row.size()) {
        absl::StrAppend(&line, row[i]);
      } else {
        absl::StrAppend(&line, row[i],
                        std::string(widths[i] - row[i].size() + 2, ' '));
      }
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return out;
}

std::string FormatServerTablesJson(const std::vector<ServerTables>& servers) {
  std::string out = "{\"servers\":[";
  for (size_t i = 0; i < servers.size(); ++i) {
    // FormatTablesJson() is {"tables":[...]}: splice the server in front.
    absl::StrAppend(&out, i > 0 ? "," : "",
                    "{\"server\":", JsonQuote(servers[i].server), ",",
                    FormatTablesJson(servers[i].tables).substr(1));
  }
  return out + "]}";
}

// Asks each of several servers; prints what those that answered said.
// The exit code of the first failure (reported on `err`), else kExitOk.
int RunTablesOnServers(const std::vector<std::string>& servers,
                       const CommonFlags& common, bool json, std::ostream& out,
                       std::ostream& err) {
  std::vector<ServerTables> answers;
  int code = kExitOk;
  for (const std::string& server : servers) {
    CommonFlags one = common;
    one.server = server;
    absl::StatusOr<std::unique_ptr<Client>> client = ConnectOne(one);
    absl::StatusOr<std::vector<v1::TableStatus>> tables =
        client.ok()
            ? internal::ListTablesCall(**client)
            : absl::StatusOr<std::vector<v1::TableStatus>>(client.status());
    if (!tables.ok()) {
      const int failed = ReportError(err, "tables", one, tables.status());
      if (code == kExitOk) code = failed;
      continue;
    }
    answers.push_back({server, *std::move(tables)});
  }
  out << (json ? FormatServerTablesJson(answers) + "\n"
               : FormatServerTablesText(answers));
  out.flush();
  return code;
}

}  // namespace

int RunTables(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env) {
  CliCommand cmd("tables", kTablesUsage, CliCommand::Target::kServers, env, out,
                 err);
  bool json = false;
  cmd.flags().AddBool("json", &json, "print JSON instead of a table");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  if (!cmd.positional().empty()) {
    return cmd.UsageError("unexpected argument '" + cmd.positional()[0] + "'");
  }
  const std::vector<std::string> servers = ServerList(cmd.common());
  if (servers.size() > 1) {
    return RunTablesOnServers(servers, cmd.common(), json, out, err);
  }
  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  absl::StatusOr<std::vector<v1::TableStatus>> tables =
      internal::ListTablesCall(*client);
  if (!tables.ok()) return cmd.Error(tables.status());
  out << (json ? FormatTablesJson(*tables) + "\n"
               : FormatServerTablesText({{cmd.common().server, *tables}},
                                        /*several=*/false));
  out.flush();
  return kExitOk;
}

}  // namespace msgq
