// Subscriber: a consumer of one message table as the engine sees it.
//
// The gRPC stream implements it (StreamSink in server/stream_reactor.h);
// tests implement it too. The manager hands batches with Send() and the
// subscriber reports back with MessageManager::OnSendDone() once per batch,
// when it was written or failed. A subscriber has at most
// MessageManager::Options:: max_batches_per_subscriber batches outstanding, so
// a slow one is skipped, never waited for. Report a batch done only once it
// left for the client (the socket or gRPC took it): that is how a stream
// that stopped draining is seen. One that lets a message run out its ack
// wait yields its sends to the others (Dispatcher, "Stuck subscribers").
#ifndef MSGQ_ENGINE_QUEUE_SUBSCRIBER_H_
#define MSGQ_ENGINE_QUEUE_SUBSCRIBER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/queue/message.h"

namespace msgq {

class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // Takes a batch to deliver. Called without engine locks held, from an
  // engine thread or from a thread inside OnSendDone/Subscribe. Must not
  // block. `sequence` numbers the batches given to this subscriber 0, 1,
  // 2, ... in the order the manager picked them; calls from different
  // threads may arrive out of that order, and the subscriber delivers in
  // sequence order (every number does arrive).
  virtual void Send(uint64_t sequence, MessageBatch batch) = 0;
  // The table's manager is going away (table reloaded or dropped, server
  // stopping): end the stream with `status`. A Send already under way on
  // another thread may still arrive afterwards and must be dropped.
  virtual void Close(absl::Status status) = 0;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_SUBSCRIBER_H_
