// MessagingService: the consumer groups' calls (CreateGroup, ListGroups,
// DeleteGroup; docs/design/consumer-groups.md). Each authenticates its
// caller and authorizes `admin` on the table as the other admin calls do;
// the engine runs the statements (engine/engine_groups.cc) and finishes
// the call from its groups worker.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"
#include "server/auth/grpc_auth.h"
#include "server/auth/table_access.h"
#include "server/messaging_service.h"

namespace msgq {
namespace {

// At most this many names in a NOT_FOUND message.
constexpr size_t kMaxNamed = 50;

void FillGroup(const GroupRow& row, v1::Group* out) {
  out->set_keyspace(row.keyspace);
  out->set_table(row.table);
  out->set_name(row.name);
  out->set_floor_gtid(row.floor_gtid);
  out->set_filter(row.filter);
  out->set_created_at_ns(row.created_at_ns);
  out->set_paused(row.paused);
}

std::string JoinCapped(const std::vector<std::string>& names) {
  if (names.size() <= kMaxNamed) return absl::StrJoin(names, ", ");
  std::vector<std::string> shown(names.begin(), names.begin() + kMaxNamed);
  return absl::StrCat(absl::StrJoin(shown, ", "), " and ",
                      names.size() - kMaxNamed, " more");
}

}  // namespace

absl::Status MessagingService::NameTheTables(
    absl::Status status, const std::string& principal,
    const std::string& keyspace) const {
  if (status.code() != absl::StatusCode::kNotFound) return status;
  const std::vector<std::string>& served = engine_->databases();
  if (!keyspace.empty() &&
      std::find(served.begin(), served.end(), keyspace) == served.end()) {
    return absl::NotFoundError(
        absl::StrCat(status.message(), "; keyspaces: ", JoinCapped(served)));
  }
  const bool qualified = keyspace.empty() && served.size() > 1;
  std::vector<std::string> names;
  for (const Engine::TableInfo& t : engine_->ListTables()) {
    if (!keyspace.empty() && t.keyspace != keyspace) continue;
    if (!authorizer_->MayList(principal, t.keyspace, t.name)) continue;
    names.push_back(qualified ? absl::StrCat(t.keyspace, ".", t.name) : t.name);
  }
  return absl::NotFoundError(absl::StrCat(
      status.message(),
      names.empty() ? "; there are no message tables" : "; message tables: ",
      JoinCapped(names)));
}

grpc::ServerUnaryReactor* MessagingService::CreateGroup(
    grpc::CallbackServerContext* context, const v1::CreateGroupRequest* request,
    v1::CreateGroupResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> principal =
      auth::AuthenticateCall(*authorizer_, peers_, *context);
  if (!principal.ok()) {
    reactor->Finish(ToGrpcStatus(principal.status()));
    return reactor;
  }
  absl::StatusOr<std::shared_ptr<MessageManager>> manager = auth::FindForCaller(
      *engine_, authorizer_, *principal, auth::Action::kAdmin,
      request->keyspace(), request->name());
  if (!manager.ok()) {
    reactor->Finish(ToGrpcStatus(
        NameTheTables(manager.status(), *principal, request->keyspace())));
    return reactor;
  }
  engine_->CreateGroup((*manager)->table().keyspace, request->name(),
                       GroupSpec{.name = request->group(),
                                 .from = request->start(),
                                 .filter = request->filter()},
                       [reactor, response](absl::StatusOr<GroupRow> row) {
                         if (!row.ok()) {
                           reactor->Finish(ToGrpcStatus(row.status()));
                           return;
                         }
                         FillGroup(*row, response->mutable_group());
                         reactor->Finish(grpc::Status::OK);
                       });
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::ListGroups(
    grpc::CallbackServerContext* context, const v1::ListGroupsRequest* request,
    v1::ListGroupsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> principal =
      auth::AuthenticateCall(*authorizer_, peers_, *context);
  if (!principal.ok()) {
    reactor->Finish(ToGrpcStatus(principal.status()));
    return reactor;
  }
  std::string keyspace = request->keyspace();
  if (!request->name().empty()) {
    absl::StatusOr<std::shared_ptr<MessageManager>> manager =
        auth::FindForCaller(*engine_, authorizer_, *principal,
                            auth::Action::kAdmin, keyspace, request->name());
    if (!manager.ok()) {
      reactor->Finish(
          ToGrpcStatus(NameTheTables(manager.status(), *principal, keyspace)));
      return reactor;
    }
    keyspace = (*manager)->table().keyspace;
  }
  engine_->ListGroups(keyspace, request->name(),
                      [this, reactor, response, principal = *principal](
                          absl::StatusOr<std::vector<GroupRow>> rows) {
                        if (!rows.ok()) {
                          reactor->Finish(ToGrpcStatus(rows.status()));
                          return;
                        }
                        for (const GroupRow& row : *rows) {
                          if (!authorizer_
                                   ->Authorize(principal, auth::Action::kAdmin,
                                               row.keyspace, row.table)
                                   .ok()) {
                            continue;
                          }
                          FillGroup(row, response->add_groups());
                        }
                        reactor->Finish(grpc::Status::OK);
                      });
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::DeleteGroup(
    grpc::CallbackServerContext* context, const v1::DeleteGroupRequest* request,
    v1::DeleteGroupResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> principal =
      auth::AuthenticateCall(*authorizer_, peers_, *context);
  if (!principal.ok()) {
    reactor->Finish(ToGrpcStatus(principal.status()));
    return reactor;
  }
  absl::StatusOr<std::shared_ptr<MessageManager>> manager = auth::FindForCaller(
      *engine_, authorizer_, *principal, auth::Action::kAdmin,
      request->keyspace(), request->name());
  std::string keyspace = request->keyspace();
  if (manager.ok()) {
    keyspace = (*manager)->table().keyspace;
  } else if (keyspace.empty() ||
             (manager.status().code() != absl::StatusCode::kNotFound &&
              manager.status().code() !=
                  absl::StatusCode::kFailedPrecondition)) {
    // The caller may administer the table only when a keyspace is named
    // (FindForCaller checked it then): a group of a table that is gone
    // can still be deleted there.
    reactor->Finish(ToGrpcStatus(
        NameTheTables(manager.status(), *principal, request->keyspace())));
    return reactor;
  }
  engine_->DeleteGroup(keyspace, request->name(), request->group(),
                       [reactor](absl::Status status) {
                         reactor->Finish(ToGrpcStatus(status));
                       });
  return reactor;
}

}  // namespace msgq
