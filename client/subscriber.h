// Subscriber receives the messages of one table and hands each to a handler,
// settling it according to the handler's HandlerResult.
//
// It keeps a MessageStream open on its own thread and decodes rows into
// Messages, which a pool of `concurrency` worker threads passes to the
// handler. Then:
//   - Ack (or OK): the id joins the next ack batch (one MessageAck per
//     `ack.max_batch` ids or per `ack.max_delay`, never one per message);
//   - Retry (or an error status) / RetryAfter / Dead: the worker nacks the
//     delivery at once, one MessageNack per message, with the delay (absent
//     for Retry: the table's backoff), the reason and the dead flag. Nacks
//     are not batched: they are the exception path, their reasons usually
//     differ, and a worker that waits for its nack slows a failing consumer
//     down instead of letting it race through the queue. A failed nack is
//     reported (on_nack_error) and not retried: the delivery then times out
//     after ack_wait and is sent again anyway.
// While a handler runs, its delivery is extended (see heartbeat.h) every
// `heartbeat.fraction * ack_wait` by ack_wait, up to
// `heartbeat.max_extension`, so a slow handler keeps its message. ack_wait
// is looked up with ListTables at each stream start unless
// `heartbeat.ack_wait` is set. Delivery is at least once: a handler must
// tolerate seeing a message again.
//
// When the stream ends with a retryable error (UNAVAILABLE: server shutting
// down, table reloaded, connection dropped; see IsRetryableStreamError) the
// subscriber reopens it after a capped exponential backoff with jitter, reset
// whenever a stream starts. While the server is unreachable, a reopened
// stream waits for the channel to reconnect (gRPC wait-for-ready; the channel
// has its own capped, jittered backoff, see NewChannel) instead of failing
// over and over, so a restarted server is picked up as soon as it listens.
// Other errors (NOT_FOUND, FAILED_PRECONDITION, INVALID_ARGUMENT, ...) and
// protocol violations (INTERNAL, from a malformed response) end the
// subscription: Wait() returns them.
//
// Example:
//   auto subscriber = Subscriber::Start(
//       NewChannel("127.0.0.1:15999"), "orders",
//       [](const Message& msg) -> HandlerResult {
//         std::optional<absl::string_view> body = msg.Get("message");
//         if (!body.has_value()) return HandlerResult::Dead("NULL message");
//         return Process(*body);  // absl::Status: an error retries it
//       },
//       SubscriberOptions{.concurrency = 4});
//   if (!subscriber.ok()) return subscriber.status();
//   ...
//   (*subscriber)->Stop();  // or let the unique_ptr go
//
// Thread-safety: all methods may be called from any thread, except that
// Stop() and the destructor must not be called from a handler or callback
// (they join those threads); use RequestStop() there. The handler and the
// callbacks run on internal threads and must not throw.
#ifndef MSGQ_CLIENT_SUBSCRIBER_H_
#define MSGQ_CLIENT_SUBSCRIBER_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/ack_batcher.h"
#include "client/backoff.h"
#include "client/bounded_queue.h"
#include "client/client.h"
#include "client/handler_result.h"
#include "client/heartbeat.h"
#include "client/message.h"
#include "client/table_ref.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq {

struct SubscriberOptions {
  // Handler invocations that may run at once (worker threads). At least 1;
  // with 1, messages are handled in the order received.
  int concurrency = 1;
  // Messages received but not yet given to a handler. When full, reading
  // pauses and gRPC flow control pushes back on the server. At least 1.
  size_t queue_capacity = 16;
  // When false, nothing is settled (e.g. to peek at a queue): no ack, nack
  // or extend is sent, the handler's result only feeds stats() and messages
  // are redelivered after the table's ack_wait.
  bool auto_ack = true;
  // How acknowledgements are batched.
  AckBatcherOptions ack;
  // Deadline of each MessageAck, MessageNack, MessageExtend and ListTables.
  absl::Duration ack_timeout = absl::Seconds(10);
  // Extending the deliveries of running handlers; max_extension = 0
  // disables it (and the ListTables lookup).
  HeartbeatOptions heartbeat;
  // Delays between reconnects.
  BackoffOptions backoff;
  // Seed of the backoff jitter; 0 picks a random one.
  uint64_t jitter_seed = 0;
  // When false, failing to start the very first stream ends the subscription
  // with that error (e.g. UNAVAILABLE when the server is down) instead of
  // retrying; later reconnects always follow the retry rules above. When
  // true, a subscriber started while the server is down waits for it.
  bool retry_initial_connect = true;

  // Optional callbacks, run on internal threads; they must return quickly.
  // A stream started; `schema` holds the table's columns.
  std::function<void(const Schema& schema)> on_connected;
  // A stream ended with retryable `status`; the next try is in `retry_in`.
  std::function<void(const absl::Status& status, absl::Duration retry_in)>
      on_stream_error;
  // A MessageAck call failed (the ids may be retried; see ack_batcher.h).
  std::function<void(const absl::Status& status)> on_ack_error;
  // A MessageNack call failed (not retried).
  std::function<void(const absl::Status& status)> on_nack_error;
  // Heartbeats cannot work: ListTables failed or does not list the table
  // (reported once per stream start), or a MessageExtend failed.
  std::function<void(const absl::Status& status)> on_heartbeat_error;
};

class Subscriber {
 public:
  // Decides the fate of one message (see HandlerResult; a function
  // returning absl::Status fits too). Runs on a worker thread.
  using Handler = std::function<HandlerResult(const Message& message)>;

  // Counters since Start().
  struct Stats {
    int64_t received = 0;         // messages decoded from the stream
    int64_t handled = 0;          // handler returned Ack (or OK)
    int64_t failed = 0;           // handler returned Retry or Dead
    int64_t acked = 0;            // ids the server reported as newly acked
    int64_t ack_calls = 0;        // MessageAck calls that succeeded
    int64_t retried = 0;          // nacked rows the server will send again
    int64_t dead = 0;             // nacked rows the server reported dead
    int64_t nack_calls = 0;       // MessageNack calls that succeeded
    int64_t extended = 0;         // extends that kept a delivery
    int64_t lost = 0;             // extends that found it sent again
    int64_t extend_errors = 0;    // MessageExtend calls that failed
    int64_t streams_started = 0;  // streams that delivered their fields
    int64_t reconnects = 0;       // retries after a stream ended
  };

  // Subscribes to `table` over `channel` (see NewChannel) and starts the
  // stream, worker and ack threads. The stream is opened asynchronously, so
  // an unknown table shows up as Wait()'s result, not here.
  // Returns INVALID_ARGUMENT when `channel` or `handler` is null, the table
  // name is empty, or `options.concurrency` < 1.
  static absl::StatusOr<std::unique_ptr<Subscriber>> Start(
      std::shared_ptr<grpc::ChannelInterface> channel, TableRef table,
      Handler handler, SubscriberOptions options = {});

  // Stop()s.
  ~Subscriber();

  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Asks the subscriber to stop and returns at once: cancels the stream and
  // discards messages not yet handed to a handler (they will be redelivered).
  // Handlers already running finish. Idempotent; safe from a handler.
  void RequestStop();

  // Blocks until the stream loop has ended: OK when stopped by request,
  // otherwise the error that ended the subscription (see class comment).
  // Handlers may still be running; call Stop() to wait for them.
  absl::Status Wait();

  // True once the stream loop has ended (Wait() would not block).
  bool done() const;

  // RequestStop()s, waits for running handlers (and their nacks), then sends
  // the acks they produced. Idempotent. Not from a handler or callback.
  void Stop();

  Stats stats() const;

 private:
  struct StreamEnd {
    absl::Status status;
    bool started = false;
    bool protocol_error = false;
  };

  Subscriber(std::shared_ptr<grpc::ChannelInterface> channel, TableRef table,
             Handler handler, SubscriberOptions options);

  // A message and when it arrived (its ack_wait runs from about then).
  struct Received {
    Message message;
    absl::Time at;
  };

  void RunStreamLoop();
  StreamEnd RunStream(grpc::ClientContext& context);
  void LearnAckWait();
  void RunWorker();
  void Settle(const Message& message, const HandlerResult& result);
  absl::Status SendAcks(std::vector<std::string> ids);

  // Constant after construction.
  const TableRef table_;
  const Handler handler_;
  const SubscriberOptions options_;
  const std::unique_ptr<v1::Messaging::Stub> stub_;
  Client client_;

  BoundedQueue<Received> queue_;
  AckBatcher batcher_;
  Heartbeat heartbeat_;

  mutable absl::Mutex mu_;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  // The context of the open stream, so RequestStop() can cancel it.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::thread stream_thread_ ABSL_GUARDED_BY(join_mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(join_mu_);

  std::atomic<int64_t> received_{0};
  std::atomic<int64_t> handled_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> acked_{0};
  std::atomic<int64_t> ack_calls_{0};
  std::atomic<int64_t> retried_{0};
  std::atomic<int64_t> dead_{0};
  std::atomic<int64_t> nack_calls_{0};
  std::atomic<int64_t> streams_started_{0};
  std::atomic<int64_t> reconnects_{0};
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_SUBSCRIBER_H_
