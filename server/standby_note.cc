#include "server/standby_note.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace msgq {

std::optional<std::string> StandbyNote(const MessageTable& table,
                                       const TableOwnership& ownership,
                                       absl::string_view self) {
  if (ownership.state != "standby" && ownership.state != "unknown") {
    return std::nullopt;
  }
  const std::string head =
      absl::StrCat("this msgqd (", self, ") stands by for `", table.keyspace,
                   "`.`", table.name, "`: ");
  const std::string tail =
      "; this stream receives its messages only once this msgqd takes the "
      "table over (subscribe to every instance: msgq --server=A,B)";
  std::string note;
  if (ownership.state == "unknown") {
    note = absl::StrCat(head, "it cannot read the table's lease (",
                        ownership.error, ")", tail);
  } else if (ownership.owner.empty()) {
    note = absl::StrCat(head, "no instance holds its lease yet", tail);
  } else {
    note = absl::StrCat(head, "instance ", ownership.owner, " sends it", tail);
  }
  // gRPC metadata values are printable ASCII.
  std::string out;
  for (char c : note) {
    if (c >= 0x20 && c <= 0x7e) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "\\x", absl::BytesToHexString(std::string(1, c)));
    }
  }
  return out;
}

}  // namespace msgq
