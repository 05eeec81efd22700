// MessagingService: the msgq.v1.Messaging gRPC service (callback API) over
// an Engine. Handlers never block: streams are StreamReactors, acks finish
// from the table manager's thread, ListTables reads in-memory state.
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
  grpc::ServerUnaryReactor* ListTables(
      grpc::CallbackServerContext* context,
      const v1::ListTablesRequest* request,
      v1::ListTablesResponse* response) override;

 private:
  Engine* const engine_;
};

}  // namespace msgq

#endif  // MSGQ_SERVER_MESSAGING_SERVICE_H_
