#include "server/auth/table_access.h"

#include <functional>
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

// The rules of FindForCaller, with `allowed(keyspace)` saying whether the
// caller may use the table in that keyspace (OK) or the denial to answer.
absl::StatusOr<std::shared_ptr<MessageManager>> FindAllowed(
    const Engine& engine,
    const std::function<absl::Status(absl::string_view)>& allowed,
    absl::string_view keyspace, absl::string_view name) {
  absl::StatusOr<std::shared_ptr<MessageManager>> found =
      engine.Find(keyspace, name);
  if (!found.ok() && SaysNothingOfTheTable(found.status())) return found;
  if (!keyspace.empty()) {
    if (absl::Status status = allowed(keyspace); !status.ok()) return status;
    return found;
  }
  const std::vector<std::string>& databases = engine.databases();
  std::vector<std::string> permitted;
  for (const std::string& db : databases) {
    if (allowed(db).ok()) permitted.push_back(db);
  }
  if (permitted.empty()) {
    if (databases.empty()) return found;
    return allowed(databases.front());
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

}  // namespace

absl::StatusOr<std::shared_ptr<MessageManager>> FindForCaller(
    const Engine& engine, const Authorizer* authorizer,
    absl::string_view principal, Action action, absl::string_view keyspace,
    absl::string_view name) {
  if (authorizer == nullptr || !authorizer->has_policy()) {
    return engine.Find(keyspace, name);
  }
  return FindAllowed(
      engine,
      [&](absl::string_view db) {
        return authorizer->Authorize(principal, action, db, name);
      },
      keyspace, name);
}

absl::Status SeeDenied(absl::string_view principal, absl::string_view keyspace,
                       absl::string_view name) {
  return absl::PermissionDeniedError(absl::StrCat("permission denied: '",
                                                  principal, "' may not see ",
                                                  keyspace, ".", name));
}

absl::StatusOr<std::shared_ptr<MessageManager>> FindVisibleToCaller(
    const Engine& engine, const Authorizer* authorizer,
    absl::string_view principal, absl::string_view keyspace,
    absl::string_view name) {
  if (authorizer == nullptr || !authorizer->has_policy()) {
    return engine.Find(keyspace, name);
  }
  return FindAllowed(
      engine,
      [&](absl::string_view db) {
        return authorizer->MayList(principal, db, name)
                   ? absl::OkStatus()
                   : SeeDenied(principal, db, name);
      },
      keyspace, name);
}

}  // namespace msgq::auth
