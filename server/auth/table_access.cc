#include "server/auth/table_access.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace msgq::auth {
namespace {

// Errors of Engine::Find that hold no fact about the named table.
bool SaysNothingOfTheTable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kUnavailable;
}

}  // namespace

absl::StatusOr<std::shared_ptr<MessageManager>> FindForCaller(
    const Engine& engine, const Authorizer* authorizer,
    absl::string_view principal, Action action, absl::string_view keyspace,
    absl::string_view name) {
  absl::StatusOr<std::shared_ptr<MessageManager>> found =
      engine.Find(keyspace, name);
  if (authorizer == nullptr || !authorizer->has_policy()) return found;
  if (!found.ok() && SaysNothingOfTheTable(found.status())) return found;
  if (!keyspace.empty()) {
    if (absl::Status allowed =
            authorizer->Authorize(principal, action, keyspace, name);
        !allowed.ok()) {
      return allowed;
    }
    return found;
  }
  const std::vector<std::string>& databases = engine.databases();
  std::vector<std::string> permitted;
  for (const std::string& db : databases) {
    if (authorizer->Authorize(principal, action, db, name).ok()) {
      permitted.push_back(db);
    }
  }
  if (permitted.empty()) {
    if (databases.empty()) return found;
    return authorizer->Authorize(principal, action, databases.front(), name);
  }
  for (const std::string& db : permitted) {
    absl::StatusOr<std::shared_ptr<MessageManager>> in_db =
        engine.Find(db, name);
    if (in_db.ok() || in_db.status().code() != absl::StatusCode::kNotFound) {
      return in_db;
    }
  }
  return absl::NotFoundError(absl::StrCat("message table `", name,
                                          "` not found in keyspaces ",
                                          absl::StrJoin(permitted, ", ")));
}

}  // namespace msgq::auth
