// Subscriber receives the messages of one table from one or several servers
// and hands each to a handler, settling it according to the handler's
// HandlerResult.
//
// Several servers (fan-in): the subscriber opens one MessageStream per
// server (ServerChannel; see client/internal/server_stream.h), each on its own
// thread and kept open independently (one server down does not stop the
// others), and delivers all their messages to the same handler and workers.
// That serves both topologies of docs/several-instances.md: msgqd instances
// sharing one database, where only the lease owner of a table sends and the
// others keep the subscriber connected and idle (a takeover needs no
// reconnect), and shards (several MySQL primaries, one msgqd each). Every
// message remembers the server it came from (Message::server()) and its ack,
// nack and extends go to that server only: ids are unique only within a shard,
// so acking id 5 on another shard would ack a different message. When that
// server is down, its acks fail and are retried and reported as with one
// server; the message comes back after its ack_wait.
//
// It decodes rows into Messages, which a pool of `concurrency` worker threads
// passes to the handler. Then:
//   - Ack (or OK): the id joins the next ack batch of its server (one
//     MessageAck per `ack.max_batch` ids or per `ack.max_delay`, never one
//     per message);
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
// is looked up with ListTables (on the message's server) at each stream
// start unless `heartbeat.ack_wait` is set. Delivery is at least once: a
// handler must tolerate seeing a message again.
//
// When a stream ends with a retryable error (UNAVAILABLE: server shutting
// down, table reloaded, connection dropped; see IsRetryableStreamError) the
// subscriber reopens it after a capped exponential backoff with jitter, reset
// whenever a stream starts. While the server is unreachable each try fails at
// once (no gRPC wait-for-ready; the channel retries the connection with its
// own capped, jittered backoff, see NewChannel) and is reported to
// SubscriberOptions::on_stream_error, so the application can say so.
// Other errors (NOT_FOUND, FAILED_PRECONDITION, INVALID_ARGUMENT, ...) and
// protocol violations (INTERNAL, from a malformed response) from any server
// end the whole subscription (a shard silently left unread would be worse):
// Wait() returns the first of them, prefixed "server NAME: " when there are
// several servers.
//
// Example:
//   auto subscriber = Subscriber::Start(
//       ChannelsTo({"db1:15999", "db2:15999"}), "orders",
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
#ifndef MSGQ_SUBSCRIBER_H_
#define MSGQ_SUBSCRIBER_H_

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
#include "msgq/client.h"
#include "msgq/handler_result.h"
#include "msgq/message.h"
#include "msgq/subscriber_options.h"
#include "msgq/table_ref.h"

namespace msgq {

// The library's internals (client/internal/, not installed).
template <typename T>
class BoundedQueue;
struct ReceivedMessage;
class ServerStream;

class Subscriber {
 public:
  // Decides the fate of one message (see HandlerResult; a function
  // returning absl::Status fits too). Runs on a worker thread.
  using Handler = std::function<HandlerResult(const Message& message)>;

  // Counters since Start(), summed over the servers.
  using Stats = SubscriberStats;

  // Subscribes to `table` over `channel` (see NewChannel) and starts the
  // stream, worker and ack threads. The stream is opened asynchronously, so
  // an unknown table shows up as Wait()'s result, not here.
  // Returns INVALID_ARGUMENT when `channel` or `handler` is null, the table
  // name is empty, or `options.concurrency` < 1.
  static absl::StatusOr<std::unique_ptr<Subscriber>> Start(
      std::shared_ptr<grpc::ChannelInterface> channel, TableRef table,
      Handler handler, SubscriberOptions options = {});

  // Subscribes to `table` on every server of `servers` (see class comment).
  // Returns INVALID_ARGUMENT as above, and when `servers` is empty, a channel
  // is null, or two servers have the same name.
  static absl::StatusOr<std::unique_ptr<Subscriber>> Start(
      std::vector<ServerChannel> servers, TableRef table, Handler handler,
      SubscriberOptions options = {});

  // Stop()s.
  ~Subscriber();

  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Asks the subscriber to stop and returns at once: cancels the stream and
  // keeps the messages not yet handed to a handler for Stop() to hand back
  // (options.release_unhandled, the default; without it they are dropped
  // and redelivered after their ack wait). Handlers already running finish.
  // Idempotent; safe from a handler.
  void RequestStop();

  // Blocks until every stream loop has ended: OK when stopped by request,
  // otherwise the error that ended the subscription (see class comment).
  // Handlers may still be running; call Stop() to wait for them.
  absl::Status Wait();

  // True once every stream loop has ended (Wait() would not block).
  bool done() const;

  // RequestStop()s, waits for running handlers (and their nacks), then sends
  // the acks they produced and (options.release_unhandled, the default) the
  // nacks of the messages no handler got. Idempotent. Not from a handler or
  // callback.
  void Stop();

  Stats stats() const;

 private:
  Subscriber(TableRef table, Handler handler, SubscriberOptions options);

  void OnStreamDone(const absl::Status& status);
  bool ReleasesUnhandled() const;
  void RunWorker();
  void Settle(ServerStream& origin, const Message& message,
              const HandlerResult& result);

  // Constant after construction.
  const TableRef table_;
  const Handler handler_;
  const SubscriberOptions options_;
  const std::unique_ptr<BoundedQueue<ReceivedMessage>> queue_;
  // Constant once Start() returns; streams_[i] has index i.
  std::vector<std::unique_ptr<ServerStream>> streams_;

  mutable absl::Mutex mu_;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  size_t streams_done_ ABSL_GUARDED_BY(mu_) = 0;
  // Received, never handled: handed back by Stop() (release_unhandled).
  std::deque<ReceivedMessage> unhandled_ ABSL_GUARDED_BY(mu_);
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(join_mu_);

  std::atomic<int64_t> handled_{0};
  std::atomic<int64_t> failed_{0};
};

}  // namespace msgq

#endif  // MSGQ_SUBSCRIBER_H_
