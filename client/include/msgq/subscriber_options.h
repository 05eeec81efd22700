// The settings and counters of a Subscriber (see subscriber.h), and the
// servers it subscribes to. Plain values; thread-compatible.
#ifndef MSGQ_SUBSCRIBER_OPTIONS_H_
#define MSGQ_SUBSCRIBER_OPTIONS_H_

#include <grpcpp/channel.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "msgq/backoff.h"
#include "msgq/message.h"

namespace msgq {

// How a Subscriber batches its acks (one batcher per server; see
// client/internal/ack_batcher.h).
struct AckBatcherOptions {
  // Most ids per send; a full batch is sent at once.
  size_t max_batch = 100;
  // Longest an id waits for companions before its batch is sent anyway.
  absl::Duration max_delay = absl::Milliseconds(50);
  // Sends per id before it is given up on (retryable failures only).
  int max_attempts = 3;
};

// How a Subscriber extends the deliveries of running handlers (see
// client/internal/heartbeat.h).
struct HeartbeatOptions {
  // Extend every fraction * ack_wait; clamped to [0.05, 1].
  double fraction = 0.5;
  // The longest a delivery is held past its first deadline (receipt +
  // ack_wait) by extends. Zero disables heartbeats.
  absl::Duration max_extension = absl::Minutes(10);
  // The table's ack_wait, if known; zero = learn it from ListTables (the
  // Subscriber does so at each stream start).
  absl::Duration ack_wait = absl::ZeroDuration();
};

// One server of a Subscriber: a name (reported as Message::server() and in
// errors; the target, e.g. "db1:15999", by convention) and a channel to it.
struct ServerChannel {
  std::string name;
  std::shared_ptr<grpc::ChannelInterface> channel;
};

// A ServerChannel per target, named after it, over NewChannel(target).
std::vector<ServerChannel> ChannelsTo(absl::Span<const std::string> targets);

struct SubscriberOptions {
  // The consumer group to read (docs/design/consumer-groups.md), sent on
  // each MessageStream and on the acks and nacks of its messages; "" = the
  // table's default group. A group's deliveries are not extended
  // (MessageExtend names no group yet): the heartbeat is off, and a
  // handler must finish within the table's ack wait. An unknown group ends the
  // subscription with NOT_FOUND naming the table's groups.
  std::string group;
  // Handler invocations that may run at once (worker threads). At least 1;
  // with 1, messages are handled in the order received (per server; across
  // servers in the order they arrive).
  int concurrency = 1;
  // Messages received but not yet given to a handler, from all servers
  // together. When full, reading pauses and gRPC flow control pushes back on
  // the servers. At least 1.
  size_t queue_capacity = 16;
  // Prefetch: each server sends this subscriber at most this many messages
  // unacked at a time (MessageStreamRequest.max_unacked); 0 = unlimited.
  // Without auto_ack, messages count until their ack wait runs out.
  int max_unacked = 0;
  // When false, nothing is settled (e.g. to peek at a queue): no ack, nack
  // or extend is sent, the handler's result only feeds stats() and messages
  // are redelivered after the table's ack_wait.
  bool auto_ack = true;
  // With auto_ack: when stopping, hand back the messages received but not
  // yet given to a handler (nack, no delay, last_error kept), so they are
  // sent again at once rather than after their ack wait (client/SPEC.md,
  // "Close and drain"). The nacks are sent by Stop(); a failed one goes to
  // on_nack_error. When false they are dropped and come back after their
  // ack wait.
  bool release_unhandled = true;
  // How acknowledgements are batched (one batcher per server).
  AckBatcherOptions ack;
  // Deadline of each MessageAck, MessageNack, MessageExtend and ListTables.
  absl::Duration ack_timeout = absl::Seconds(10);
  // Extending the deliveries of running handlers; max_extension = 0
  // disables it (and the ListTables lookup).
  HeartbeatOptions heartbeat;
  // Delays between reconnects (each server has its own backoff).
  BackoffOptions backoff;
  // Seed of the backoff jitter; 0 picks a random one. Server i uses seed + i.
  uint64_t jitter_seed = 0;
  // When false, failing to start the very first stream to a server ends the
  // subscription with that error (e.g. UNAVAILABLE when the server is down)
  // instead of retrying; later reconnects always follow the retry rules. When
  // true, a subscriber started while a server is down waits for it.
  bool retry_initial_connect = true;

  // Optional callbacks, run on internal threads; they must return quickly.
  // With several servers, the statuses given to them start with
  // "server NAME: ".
  // A stream started; `schema` holds the table's columns.
  std::function<void(const Schema& schema)> on_connected;
  // The same, naming the server (ServerChannel::name).
  std::function<void(absl::string_view server, const Schema& schema)>
      on_server_connected;
  // A stream started on a server that does not send the table (it stands
  // by for it: another instance holds its lease); `note` names the one
  // that does (server/standby_note.h). The stream stays open and delivers
  // once that server takes the table over.
  std::function<void(absl::string_view server, absl::string_view note)>
      on_standby;
  // A stream ended with retryable `status`; the next try is in `retry_in`.
  std::function<void(const absl::Status& status, absl::Duration retry_in)>
      on_stream_error;
  // A MessageAck call failed (the ids may be retried; see
  // client/internal/ack_batcher.h).
  std::function<void(const absl::Status& status)> on_ack_error;
  // A MessageNack call failed (not retried).
  std::function<void(const absl::Status& status)> on_nack_error;
  // Heartbeats cannot work: ListTables failed or does not list the table
  // (reported once per stream start), or a MessageExtend failed.
  std::function<void(const absl::Status& status)> on_heartbeat_error;
};

// Counters of a Subscriber since Start(), summed over its servers.
struct SubscriberStats {
  int64_t received = 0;         // messages decoded from the streams
  int64_t handled = 0;          // handler returned Ack (or OK)
  int64_t failed = 0;           // handler returned Retry or Dead
  int64_t acked = 0;            // ids the servers reported as newly acked
  int64_t ack_calls = 0;        // MessageAck calls that succeeded
  int64_t retried = 0;          // nacked rows the servers will send again
  int64_t dead = 0;             // nacked rows the servers reported dead
  int64_t nack_calls = 0;       // MessageNack calls that succeeded
  int64_t extended = 0;         // extends that kept a delivery
  int64_t lost = 0;             // extends that found it sent again
  int64_t extend_errors = 0;    // MessageExtend calls that failed
  int64_t streams_started = 0;  // streams that delivered their fields
  int64_t reconnects = 0;       // retries after a stream ended
};

}  // namespace msgq

#endif  // MSGQ_SUBSCRIBER_OPTIONS_H_
