#include "client/subscriber.h"

#include <grpcpp/support/sync_stream.h>

#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace msgq {
namespace {

uint64_t SeedOrRandom(uint64_t seed) {
  if (seed != 0) return seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subscriber>> Subscriber::Start(
    std::shared_ptr<grpc::ChannelInterface> channel, TableRef table,
    Handler handler, SubscriberOptions options) {
  if (channel == nullptr) return absl::InvalidArgumentError("null channel");
  if (handler == nullptr) return absl::InvalidArgumentError("null handler");
  if (table.name.empty()) {
    return absl::InvalidArgumentError("empty table name");
  }
  if (options.concurrency < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "concurrency must be at least 1, got ", options.concurrency));
  }
  if (options.ack_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("ack_timeout must be positive");
  }
  std::unique_ptr<Subscriber> subscriber(
      new Subscriber(std::move(channel), std::move(table), std::move(handler),
                     std::move(options)));
  {
    Subscriber* s = subscriber.get();
    absl::MutexLock lock(&s->join_mu_);
    for (int i = 0; i < s->options_.concurrency; ++i) {
      s->workers_.emplace_back([s] { s->RunWorker(); });
    }
    s->stream_thread_ = std::thread([s] { s->RunStreamLoop(); });
  }
  subscriber->heartbeat_.Start();
  return subscriber;
}

Subscriber::Subscriber(std::shared_ptr<grpc::ChannelInterface> channel,
                       TableRef table, Handler handler,
                       SubscriberOptions options)
    : table_(std::move(table)),
      handler_(std::move(handler)),
      options_(std::move(options)),
      stub_(v1::Messaging::NewStub(channel)),
      client_(channel, ClientOptions{.timeout = options_.ack_timeout}),
      queue_(options_.queue_capacity),
      batcher_(
          options_.ack,
          [this](std::vector<std::string> ids) {
            return SendAcks(std::move(ids));
          },
          options_.on_ack_error),
      heartbeat_(
          options_.auto_ack
              ? options_.heartbeat
              : HeartbeatOptions{.max_extension = absl::ZeroDuration()},
          [this](const Delivery& delivery, absl::Duration duration) {
            return client_.Extend(table_, {delivery}, duration);
          },
          options_.on_heartbeat_error) {}

Subscriber::~Subscriber() { Stop(); }

void Subscriber::RequestStop() {
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  queue_.Close();
}

absl::Status Subscriber::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
  return final_status_;
}

bool Subscriber::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

void Subscriber::Stop() {
  RequestStop();
  {
    absl::MutexLock lock(&join_mu_);
    if (stream_thread_.joinable()) stream_thread_.join();
    for (std::thread& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
  }
  // Only now: the workers may have queued acks until they were joined.
  heartbeat_.Close();
  batcher_.Close();
}

Subscriber::Stats Subscriber::stats() const {
  Stats stats;
  stats.received = received_.load();
  stats.handled = handled_.load();
  stats.failed = failed_.load();
  stats.acked = acked_.load();
  stats.ack_calls = ack_calls_.load();
  stats.retried = retried_.load();
  stats.dead = dead_.load();
  stats.nack_calls = nack_calls_.load();
  const Heartbeat::Stats heartbeat = heartbeat_.stats();
  stats.extended = heartbeat.extended;
  stats.lost = heartbeat.lost;
  stats.extend_errors = heartbeat.errors;
  stats.streams_started = streams_started_.load();
  stats.reconnects = reconnects_.load();
  return stats;
}

void Subscriber::RunStreamLoop() {
  Backoff backoff(options_.backoff, SeedOrRandom(options_.jitter_seed));
  bool ever_started = false;
  absl::Status final_status;
  while (true) {
    grpc::ClientContext context;
    // Unless told to fail fast, wait for the channel to (re)connect rather
    // than fail at once while it is down: the channel retries connections
    // with its own capped, jittered backoff (see NewChannel), so a restarted
    // server is picked up as soon as it listens.
    context.set_wait_for_ready(ever_started || options_.retry_initial_connect);
    {
      absl::MutexLock lock(&mu_);
      if (stop_requested_) break;
      context_ = &context;
    }
    StreamEnd end = RunStream(context);
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      if (stop_requested_) break;
    }
    if (end.started) {
      ever_started = true;
      backoff.Reset();
    }
    const bool retry = !end.protocol_error &&
                       IsRetryableStreamError(end.status) &&
                       (ever_started || options_.retry_initial_connect);
    if (!retry) {
      final_status = end.status.ok()
                         ? absl::InternalError("stream ended without error")
                         : end.status;
      break;
    }
    const absl::Duration delay = backoff.Next();
    ++reconnects_;
    if (options_.on_stream_error) {
      options_.on_stream_error(
          end.status.ok() ? absl::UnavailableError("stream ended by server")
                          : end.status,
          delay);
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stop_requested_), delay);
    if (stop_requested_) break;
  }
  absl::MutexLock lock(&mu_);
  done_ = true;
  final_status_ = final_status;
}

Subscriber::StreamEnd Subscriber::RunStream(grpc::ClientContext& context) {
  StreamEnd end;
  v1::MessageStreamRequest request;
  request.set_keyspace(table_.keyspace);
  request.set_name(table_.name);
  std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader =
      stub_->MessageStream(&context, request);

  std::shared_ptr<const Schema> schema;
  v1::MessageStreamResponse response;
  bool abandoned = false;  // stopped reading before the server ended it
  while (!abandoned && reader->Read(&response)) {
    if (schema == nullptr) {
      absl::StatusOr<std::shared_ptr<const Schema>> parsed =
          Schema::FromFields(response.fields());
      if (!parsed.ok()) {
        end.status = absl::InternalError(absl::StrCat(
            "bad first response from server: ", parsed.status().message()));
        end.protocol_error = true;
        abandoned = true;
        break;
      }
      schema = *std::move(parsed);
      end.started = true;
      ++streams_started_;
      LearnAckWait();
      if (options_.on_connected) options_.on_connected(*schema);
    }
    for (const v1::Row& row : response.rows()) {
      absl::StatusOr<Message> message = DecodeRow(schema, row);
      if (!message.ok()) {
        end.status = message.status();
        end.protocol_error = true;
        abandoned = true;
        break;
      }
      ++received_;
      if (!queue_.Push({*std::move(message), absl::Now()})) {  // stopping
        abandoned = true;
        break;
      }
    }
    response.Clear();
  }
  // Finish() waits for the server to end the stream; do not wait for that
  // after walking away from it.
  if (abandoned) context.TryCancel();
  grpc::Status status = reader->Finish();
  if (!end.protocol_error) end.status = FromGrpcStatus(status);
  return end;
}

void Subscriber::LearnAckWait() {
  // An explicit ack_wait was set at construction; a disabled heartbeat needs
  // none.
  if (!heartbeat_.enabled() ||
      options_.heartbeat.ack_wait > absl::ZeroDuration()) {
    return;
  }
  absl::StatusOr<std::vector<v1::TableStatus>> tables = client_.ListTables();
  std::optional<absl::Duration> ack_wait;
  absl::Status error;
  if (!tables.ok()) {
    error = tables.status();
  } else {
    ack_wait = AckWaitOf(*tables, table_);
    if (!ack_wait.has_value()) {
      error = absl::NotFoundError(
          absl::StrCat("ListTables has no loaded table ", table_.ToString(),
                       " with an ack_wait; not extending deliveries"));
    }
  }
  // A failed lookup keeps the last known value: the table rarely changes.
  if (ack_wait.has_value()) heartbeat_.SetAckWait(ack_wait);
  if (!error.ok() && options_.on_heartbeat_error) {
    options_.on_heartbeat_error(error);
  }
}

void Subscriber::RunWorker() {
  while (std::optional<Received> received = queue_.Pop()) {
    const Message& message = received->message;
    const Heartbeat::Ticket ticket =
        heartbeat_.Begin(message.delivery(), received->at);
    HandlerResult result = handler_(message);
    heartbeat_.End(ticket);
    if (result.kind() == HandlerResult::Kind::kAck) {
      ++handled_;
    } else {
      ++failed_;
    }
    if (options_.auto_ack) Settle(message, result);
  }
}

void Subscriber::Settle(const Message& message, const HandlerResult& result) {
  if (result.kind() == HandlerResult::Kind::kAck) {
    batcher_.Add(message.id());
    return;
  }
  const NackParams params{
      .delay = result.delay(),
      .reason = result.reason(),
      .dead = result.kind() == HandlerResult::Kind::kDead,
  };
  absl::StatusOr<NackResult> nacked =
      client_.Nack(table_, {message.delivery()}, params);
  if (!nacked.ok()) {
    if (options_.on_nack_error) options_.on_nack_error(nacked.status());
    return;
  }
  ++nack_calls_;
  retried_ += nacked->retried;
  dead_ += nacked->dead;
}

absl::Status Subscriber::SendAcks(std::vector<std::string> ids) {
  absl::StatusOr<int64_t> acked = client_.Ack(table_, ids);
  if (!acked.ok()) return acked.status();
  ++ack_calls_;
  acked_ += *acked;
  return absl::OkStatus();
}

}  // namespace msgq
