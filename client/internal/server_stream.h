// ServerStream is a Subscriber's connection to one server (internal to the
// client library; use Subscriber).
//
// It keeps one MessageStream of the subscribed table open on its own thread,
// reopening it after a capped, jittered backoff when it ends with a
// retryable error (see subscriber.h for the rules), and pushes every decoded
// message, tagged with this stream's index, into the Subscriber's shared
// queue. It also owns everything that settles the messages it received: an
// AckBatcher, a Heartbeat and a Client on the same channel, so that a
// message's ack, nack and extends go to the server that sent it and to no
// other. That is required, not a convenience: message ids are unique only
// within one shard (one MySQL primary), so acking id 5 on another shard
// would ack a different message. When this server is down its acks fail and
// are retried and reported as for a single server; the message comes back
// after its ack_wait (from this server: the row lives in its shard).
//
// Lifecycle: Start() once; RequestStop() from any thread (idempotent, never
// blocks on I/O); Join() waits for the stream thread; Close() flushes acks
// and stops the heartbeat, after the workers that settle through it are
// joined. `on_done` is called once, on the stream thread, when the stream
// loop ends: OK when stopped by request, otherwise the error that ended it.
//
// Thread-safe. No lock is held across a gRPC call or a callback.
//
// Internal to the client library (client/internal/ is not installed; the
// public API is client/*.h).
#ifndef MSGQ_CLIENT_INTERNAL_SERVER_STREAM_H_
#define MSGQ_CLIENT_INTERNAL_SERVER_STREAM_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/internal/ack_batcher.h"
#include "client/internal/bounded_queue.h"
#include "client/internal/heartbeat.h"
#include "msgq/client.h"
#include "msgq/handler_result.h"
#include "msgq/message.h"
#include "msgq/subscriber_options.h"
#include "msgq/table_ref.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq {

// A message waiting for a worker: when it arrived (its ack_wait runs from
// about then) and the index of the ServerStream it came from.
struct ReceivedMessage {
  Message message;
  absl::Time at;
  size_t origin = 0;
};

class ServerStream {
 public:
  using DoneFn = std::function<void(const absl::Status& status)>;

  // `options` and `queue` must outlive this object. `label_errors` prefixes
  // the statuses given to callbacks and `on_done` with "server NAME: " (used
  // when a Subscriber has several servers).
  ServerStream(ServerChannel server, size_t index, TableRef table,
               const SubscriberOptions& options, uint64_t jitter_seed,
               bool label_errors, BoundedQueue<ReceivedMessage>& queue,
               DoneFn on_done);
  // Requires Join() and Close() first if Start() was called.
  ~ServerStream();

  ServerStream(const ServerStream&) = delete;
  ServerStream& operator=(const ServerStream&) = delete;

  const std::string& name() const { return name_; }

  void Start();
  void RequestStop();
  void Join();
  void Close();

  // Settling a message this stream received (see class comment).
  Heartbeat& heartbeat() { return heartbeat_; }
  void Ack(const std::string& id) { batcher_.Add(id); }
  // Nacks one delivery at once; a failure goes to options.on_nack_error.
  void Nack(const Message& message, const NackParams& params);
  // Hands deliveries no handler got back at once (one nack, no delay,
  // last_error kept); a failure goes to options.on_nack_error. With
  // options.release_unhandled, RunStream calls it for rows read while
  // stopping, and the Subscriber for its queue's leftovers.
  void Release(std::vector<Delivery> deliveries);

  // Adds this server's counters to `stats`.
  void AddStats(SubscriberStats& stats) const;

 private:
  struct StreamEnd {
    absl::Status status;
    bool started = false;
    bool protocol_error = false;
  };

  void RunStreamLoop();
  StreamEnd RunStream(grpc::ClientContext& context);
  void LearnAckWait();
  absl::Status SendAcks(std::vector<std::string> ids);
  absl::Status Label(const absl::Status& status) const;

  // Constant after construction.
  const std::string name_;
  const size_t index_;
  const TableRef table_;
  const SubscriberOptions& options_;
  const uint64_t jitter_seed_;
  const bool label_errors_;
  const DoneFn on_done_;
  const std::unique_ptr<v1::Messaging::Stub> stub_;
  Client client_;
  BoundedQueue<ReceivedMessage>& queue_;
  AckBatcher batcher_;
  Heartbeat heartbeat_;

  absl::Mutex mu_;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  // The context of the open stream, so RequestStop() can cancel it.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;

  absl::Mutex join_mu_;
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);

  std::atomic<int64_t> received_{0};
  std::atomic<int64_t> acked_{0};
  std::atomic<int64_t> ack_calls_{0};
  std::atomic<int64_t> retried_{0};
  std::atomic<int64_t> dead_{0};
  std::atomic<int64_t> nack_calls_{0};
  std::atomic<int64_t> streams_started_{0};
  std::atomic<int64_t> reconnects_{0};
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_INTERNAL_SERVER_STREAM_H_
