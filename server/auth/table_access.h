// FindForCaller: the table a caller names, authorized before it is looked
// up, for every port (gRPC, the console's /api, the MySQL protocol).
//
// A caller without the grant learns nothing of a table: whether it exists,
// in which keyspace, or why it failed to load. With a policy, the answer to
// a caller who may not do `action` on the table is PERMISSION_DENIED
// "permission denied: 'P' may not ACTION KEYSPACE.TABLE" whether the table
// exists, failed to load or was never there; only a caller with the grant
// gets NOT_FOUND or the table's load error (FAILED_PRECONDITION).
//
// An empty keyspace searches, in --databases order, only the keyspaces
// where the caller may do `action` on a table of that name; when there is
// none the denial names the first served keyspace (the same text whether
// or not the table exists anywhere).
//
// Errors that say nothing of the table come first, as Engine::Find gives
// them: INVALID_ARGUMENT (empty or non-UTF-8 names), UNAVAILABLE (schema
// not loaded yet, shutting down).
//
// Without an Authorizer, or one without a policy (every known caller may do
// everything), this is Engine::Find.
//
// Thread-safety: as Engine::Find and Authorizer::Authorize, callable from
// any thread; never blocks on I/O.
#ifndef MSGQ_SERVER_AUTH_TABLE_ACCESS_H_
#define MSGQ_SERVER_AUTH_TABLE_ACCESS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/engine.h"
#include "server/auth/authorizer.h"

namespace msgq::auth {

// `authorizer` may be null (open access).
absl::StatusOr<std::shared_ptr<MessageManager>> FindForCaller(
    const Engine& engine, const Authorizer* authorizer,
    absl::string_view principal, Action action, absl::string_view keyspace,
    absl::string_view name);

// FindForCaller for a caller who only looks (ListTables, the KEDA scaler):
// allowed where ListTables would list the table to the caller (any grant
// on it); denied with PERMISSION_DENIED "permission denied: 'P' may not
// see KEYSPACE.TABLE" (SeeDenied).
absl::StatusOr<std::shared_ptr<MessageManager>> FindVisibleToCaller(
    const Engine& engine, const Authorizer* authorizer,
    absl::string_view principal, absl::string_view keyspace,
    absl::string_view name);
absl::Status SeeDenied(absl::string_view principal, absl::string_view keyspace,
                       absl::string_view name);

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_TABLE_ACCESS_H_
