#include "engine/groups/group_start.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/groups/group_name.h"

namespace msgq {
namespace {

constexpr char kForms[] =
    "use earliest, latest, gtid:D-S-N[,D-S-N...] or time:TIMESTAMP";

// SimpleAtoi accepts a sign and surrounding spaces; a GTID part is digits.
bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<GtidList> ParseGtidList(absl::string_view text) {
  GtidList list;
  if (absl::StripAsciiWhitespace(text).empty()) return list;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    std::vector<absl::string_view> parts = absl::StrSplit(entry, '-');
    uint32_t domain = 0;
    GtidEntry gtid;
    if (parts.size() != 3 || !AllDigits(parts[0]) || !AllDigits(parts[1]) ||
        !AllDigits(parts[2]) || !absl::SimpleAtoi(parts[0], &domain) ||
        !absl::SimpleAtoi(parts[1], &gtid.server) ||
        !absl::SimpleAtoi(parts[2], &gtid.sequence)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GTID \"", EchoForError(entry),
          "\" is not DOMAIN-SERVER-SEQUENCE (unsigned numbers: domain and "
          "server up to 4294967295, sequence up to 18446744073709551615)"));
    }
    if (!list.emplace(domain, gtid).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("GTID list \"", EchoForError(text), "\" names domain ",
                       domain, " twice; one GTID per domain"));
    }
  }
  return list;
}

std::string FormatGtidList(const GtidList& list) {
  std::vector<std::string> entries;
  for (const auto& [domain, gtid] : list) {
    entries.push_back(
        absl::StrCat(domain, "-", gtid.server, "-", gtid.sequence));
  }
  return absl::StrJoin(entries, ",");
}

absl::Status CheckGtidReached(const GtidList& floor, const GtidList& server) {
  for (const auto& [domain, gtid] : floor) {
    auto it = server.find(domain);
    if (it == server.end() || it->second.sequence < gtid.sequence) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gtid:", FormatGtidList(floor),
          " is past the server's binlog position \"", FormatGtidList(server),
          "\" (domain ", domain,
          it == server.end()
              ? " has no transaction there)"
              : absl::StrCat(" is at ", it->second.sequence, ")")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GroupStart> ParseGroupStart(absl::string_view from) {
  GroupStart start;
  if (from.empty() || from == "latest") return start;
  if (from == "earliest") {
    start.kind = GroupStart::Kind::kEarliest;
    return start;
  }
  if (absl::StartsWith(from, "gtid:")) {
    const absl::string_view list = from.substr(5);
    if (list.size() > kMaxGtidListLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("--from=gtid: list is ", list.size(),
                       " characters; at most ", kMaxGtidListLength));
    }
    absl::StatusOr<GtidList> gtid = ParseGtidList(list);
    if (!gtid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--from: ", gtid.status().message()));
    }
    if (gtid->empty()) {
      return absl::InvalidArgumentError(
          "--from=gtid: names no GTID; use earliest to start before every "
          "transaction");
    }
    start.kind = GroupStart::Kind::kGtid;
    start.gtid = FormatGtidList(*gtid);
    return start;
  }
  if (absl::StartsWith(from, "time:")) {
    return absl::UnimplementedError(
        "--from=time: is not built yet; start from earliest, latest or "
        "gtid:D-S-N");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--from=\"", EchoForError(from), "\": ", kForms));
}

bool ReplayWindow::Covers(uint32_t domain, uint64_t sequence) {
  auto it = ahead_.find(domain);
  if (it == ahead_.end()) return false;
  if (sequence <= it->second.sequence) return true;
  ahead_.erase(it);
  return false;
}

}  // namespace msgq
