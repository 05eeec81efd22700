// MessagingService: the msgq.v1.Messaging gRPC service (callback API) over
// an Engine. Handlers never block: streams are StreamReactors, acks, nacks,
// extends, redrives and dead lists finish from the table manager's thread,
// SetPaused from the engine's pause writer,
// ListTables reads in-memory state.
//
// Every RPC first authenticates its caller and authorizes its action on its
// table (server/auth/authorizer.h): UNAUTHENTICATED, PERMISSION_DENIED
// naming the action and the table; MessageStream needs `stream`,
// MessageAck `ack`, MessageNack and MessageExtend `nack`, SetPaused,
// Redrive, ListDead and the consumer groups' calls `admin` (ListGroups of
// every table lists the groups of the tables the caller may administer;
// messaging_service_groups.cc). ListTables lists only the tables the
// caller has some action on (binlog and instance for every authenticated
// caller). The table is looked up before the check, so a caller may learn
// whether a table exists (NOT_FOUND) without rights on it. ListTables
// answers UNAVAILABLE with Engine::Health()'s reason (e.g. MySQL refused
// the login) while the engine knows no table and is not healthy, rather
// than an empty list.
#ifndef MSGQ_SERVER_MESSAGING_SERVICE_H_
#define MSGQ_SERVER_MESSAGING_SERVICE_H_

#include "engine/engine.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "server/auth/authorizer.h"
#include "server/auth/peer_directory.h"

namespace msgq {

class MessagingService final : public v1::Messaging::CallbackService {
 public:
  // `engine`, `authorizer` and `peers` (the gRPC front's connections,
  // server/auth/peer_directory.h; may be null) must outlive the service.
  MessagingService(Engine* engine, auth::Authorizer* authorizer,
                   const auth::PeerDirectory* peers)
      : engine_(engine), authorizer_(authorizer), peers_(peers) {}

  grpc::ServerWriteReactor<v1::MessageStreamResponse>* MessageStream(
      grpc::CallbackServerContext* context,
      const v1::MessageStreamRequest* request) override;
  grpc::ServerUnaryReactor* MessageAck(
      grpc::CallbackServerContext* context,
      const v1::MessageAckRequest* request,
      v1::MessageAckResponse* response) override;
  grpc::ServerUnaryReactor* MessageNack(
      grpc::CallbackServerContext* context,
      const v1::MessageNackRequest* request,
      v1::MessageNackResponse* response) override;
  grpc::ServerUnaryReactor* MessageExtend(
      grpc::CallbackServerContext* context,
      const v1::MessageExtendRequest* request,
      v1::MessageExtendResponse* response) override;
  grpc::ServerUnaryReactor* Redrive(grpc::CallbackServerContext* context,
                                    const v1::RedriveRequest* request,
                                    v1::RedriveResponse* response) override;
  grpc::ServerUnaryReactor* ListDead(grpc::CallbackServerContext* context,
                                     const v1::ListDeadRequest* request,
                                     v1::ListDeadResponse* response) override;
  grpc::ServerUnaryReactor* SetPaused(grpc::CallbackServerContext* context,
                                      const v1::SetPausedRequest* request,
                                      v1::SetPausedResponse* response) override;
  // Consumer groups (messaging_service_groups.cc).
  grpc::ServerUnaryReactor* CreateGroup(
      grpc::CallbackServerContext* context,
      const v1::CreateGroupRequest* request,
      v1::CreateGroupResponse* response) override;
  grpc::ServerUnaryReactor* ListGroups(
      grpc::CallbackServerContext* context,
      const v1::ListGroupsRequest* request,
      v1::ListGroupsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteGroup(
      grpc::CallbackServerContext* context,
      const v1::DeleteGroupRequest* request,
      v1::DeleteGroupResponse* response) override;
  grpc::ServerUnaryReactor* ListTables(
      grpc::CallbackServerContext* context,
      const v1::ListTablesRequest* request,
      v1::ListTablesResponse* response) override;

 private:
  // A NOT_FOUND of a table lookup, with the message tables (or keyspaces)
  // the caller could have meant appended; other statuses unchanged.
  absl::Status NameTheTables(absl::Status status, const std::string& principal,
                             const std::string& keyspace) const;

  Engine* const engine_;
  auth::Authorizer* const authorizer_;
  const auth::PeerDirectory* const peers_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_MESSAGING_SERVICE_H_
