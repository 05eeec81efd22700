#include "server/auth/policy.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/auth/config_lines.h"
#include "server/auth/glob.h"

namespace msgq::auth {
namespace {

constexpr uint8_t kAllActions =
    static_cast<uint8_t>(Action::kStream) | static_cast<uint8_t>(Action::kAck) |
    static_cast<uint8_t>(Action::kNack) | static_cast<uint8_t>(Action::kAdmin);

// The bit of one action name; 0 when unknown.
uint8_t ParseAction(absl::string_view name) {
  if (name == "stream") return static_cast<uint8_t>(Action::kStream);
  if (name == "ack") return static_cast<uint8_t>(Action::kAck);
  if (name == "nack") return static_cast<uint8_t>(Action::kNack);
  if (name == "admin") return static_cast<uint8_t>(Action::kAdmin);
  if (name == "*") return kAllActions;
  return 0;
}

}  // namespace

absl::string_view ActionName(Action action) {
  switch (action) {
    case Action::kStream:
      return "stream";
    case Action::kAck:
      return "ack";
    case Action::kNack:
      return "nack";
    case Action::kAdmin:
      return "admin";
  }
  return "unknown";
}

absl::StatusOr<Policy> Policy::Parse(absl::string_view text,
                                     absl::string_view file) {
  Policy policy;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    const std::vector<absl::string_view> fields = ConfigFields(line);
    if (fields.empty()) continue;
    if (fields.size() != 3) {
      return LineError(file, number,
                       absl::StrCat("expected 'principal keyspace/table "
                                    "actions', got ",
                                    fields.size(), " fields"));
    }
    Grant grant;
    grant.line = number;
    grant.principal = std::string(fields[0]);
    std::vector<absl::string_view> target = absl::StrSplit(fields[1], '/');
    if (target.size() != 2 || target[0].empty() || target[1].empty()) {
      return LineError(file, number,
                       "the target must be keyspace/table (globs allowed, "
                       "e.g. shop/orders_* or */*)");
    }
    grant.keyspace = std::string(target[0]);
    grant.table = std::string(target[1]);
    for (absl::string_view name : absl::StrSplit(fields[2], ',')) {
      const uint8_t bit = ParseAction(name);
      if (bit == 0) {
        return LineError(
            file, number,
            absl::StrCat("unknown action '", absl::CHexEscape(name),
                         "' (expected stream, ack, nack, admin or *)"));
      }
      grant.actions |= bit;
    }
    policy.grants_.push_back(std::move(grant));
  }
  return policy;
}

uint8_t Policy::ActionsOf(absl::string_view principal,
                          absl::string_view keyspace,
                          absl::string_view table) const {
  uint8_t actions = 0;
  for (const Grant& g : grants_) {
    if ((actions | g.actions) == actions) continue;
    if (GlobMatch(g.principal, principal) && GlobMatch(g.keyspace, keyspace) &&
        GlobMatch(g.table, table)) {
      actions |= g.actions;
    }
  }
  return actions;
}

bool Policy::Allows(absl::string_view principal, absl::string_view keyspace,
                    absl::string_view table, Action action) const {
  return (ActionsOf(principal, keyspace, table) &
          static_cast<uint8_t>(action)) != 0;
}

bool Policy::AllowsAny(absl::string_view principal, absl::string_view keyspace,
                       absl::string_view table) const {
  return ActionsOf(principal, keyspace, table) != 0;
}

}  // namespace msgq::auth
