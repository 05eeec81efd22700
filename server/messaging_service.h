// MessagingService: the msgq.v1.Messaging gRPC service (callback API) over
// an Engine. Handlers never block: streams are StreamReactors, acks, nacks,
// extends, redrives and dead lists finish from the table manager's thread,
// SetPaused from the engine's pause writer,
// ListTables reads in-memory state.
#ifndef MSGQ_SERVER_MESSAGING_SERVICE_H_
#define MSGQ_SERVER_MESSAGING_SERVICE_H_

#include "engine/engine.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq {

class MessagingService final : public v1::Messaging::CallbackService {
 public:
  // `engine` must outlive the service.
  explicit MessagingService(Engine* engine) : engine_(engine) {}

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
  grpc::ServerUnaryReactor* ListTables(
      grpc::CallbackServerContext* context,
      const v1::ListTablesRequest* request,
      v1::ListTablesResponse* response) override;

 private:
  Engine* const engine_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_MESSAGING_SERVICE_H_
