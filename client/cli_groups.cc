// `msgq groups list|create|delete`: a table's consumer groups
// (docs/design/consumer-groups.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_common.h"
#include "client/cli_format.h"
#include "client/internal/messaging_calls.h"
#include "msgq/client.h"

namespace msgq {
namespace {

constexpr char kGroupsUsage[] = R"(Usage: msgq groups list [TABLE] [flags]
       msgq groups create TABLE GROUP [--from=WHERE] [--filter=EXPR] [flags]
       msgq groups delete TABLE GROUP [flags]

Consumer groups are named, independent readers of one table, each with its
own position (docs/design/consumer-groups.md). They are kept in MySQL
(msgq_groups in the table's database). msgqd creates, lists and deletes
them; 'msgq tail TABLE --group GROUP' reads one.

list    the groups of TABLE, or of every table: KEYSPACE, TABLE, GROUP,
        FLOOR (the binlog GTID position the group has settled up to;
        "earliest" before any), CREATED (UTC) and FILTER; with --json,
        {"groups":[...]} with the field names of msgq.v1.Group.
create  a group named GROUP (1 to 64 letters, digits, '_' or '-', starting
        with a letter or digit). --from says where it starts: latest (the
        default: rows committed from now on), earliest (every row still in
        the table) or gtid:D-S-N[,D-S-N...] (rows committed after that
        binlog position). --filter selects rows by equality and IN on the
        table's columns, joined by AND:
          --filter="type IN ('order.created','order.paid') AND region = 'eu'"
        Prints "created group GROUP of TABLE from FLOOR" and the filter.
delete  the group and its state. Prints "deleted group GROUP of TABLE".

Flags:
)";

}  // namespace

int RunGroups(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err, const CliEnvironment& env) {
  CliCommand cmd("groups", kGroupsUsage, CliCommand::Target::kTable, env, out,
                 err);
  std::string from;
  std::string filter;
  bool json = false;
  cmd.flags().AddString("from", &from, "WHERE",
                        "create: earliest, latest or gtid:D-S-N[,...] "
                        "(empty: latest)");
  cmd.flags().AddString("filter", &filter, "EXPR",
                        "create: equality and IN on the table's columns, "
                        "joined by AND (empty: every message)");
  cmd.flags().AddBool("json", &json, "list: print JSON");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  const std::vector<std::string>& pos = cmd.positional();
  if (pos.empty()) return cmd.UsageError("missing list, create or delete");
  const std::string& sub = pos[0];
  if (sub != "list" && sub != "create" && sub != "delete") {
    return cmd.UsageError(absl::StrCat("unknown groups command '", sub,
                                       "': use list, create or delete"));
  }
  if (sub != "create" && (!from.empty() || !filter.empty())) {
    return cmd.UsageError("--from and --filter are for 'groups create'");
  }
  if (sub != "list" && json) {
    return cmd.UsageError("--json is for 'groups list'");
  }
  const size_t wanted = sub == "list" ? 2 : 3;
  if (sub != "list" && pos.size() < 2) return cmd.UsageError("missing TABLE");
  if (sub != "list" && pos.size() < 3) return cmd.UsageError("missing GROUP");
  if (pos.size() > wanted) {
    return cmd.UsageError(
        absl::StrCat("unexpected argument '", pos[wanted], "'"));
  }
  std::unique_ptr<Client> client = cmd.ConnectOne();
  if (client == nullptr) return kExitUsage;
  const TableRef table =
      pos.size() > 1 ? cmd.table(1) : TableRef(cmd.keyspace(), "");
  if (sub == "list") {
    absl::StatusOr<std::vector<v1::Group>> groups =
        internal::ListGroupsCall(*client, table);
    if (!groups.ok()) return cmd.Error(groups.status());
    out << (json ? FormatGroupsJson(*groups) + "\n"
                 : FormatGroupsText(*groups));
  } else if (sub == "create") {
    absl::StatusOr<v1::Group> group =
        internal::CreateGroupCall(*client, table, pos[2], from, filter);
    if (!group.ok()) return cmd.Error(group.status());
    out << "created group " << group->name() << " of " << group->keyspace()
        << "." << group->table() << " from "
        << (group->floor_gtid().empty() ? "earliest" : group->floor_gtid());
    if (!group->filter().empty()) out << " with filter " << group->filter();
    out << "\n";
  } else {
    absl::Status status = client->DeleteGroup(table, pos[2]);
    if (!status.ok()) return cmd.Error(status);
    out << "deleted group " << pos[2] << " of " << table.ToString() << "\n";
  }
  out.flush();
  return kExitOk;
}

}  // namespace msgq
