#include "client/internal/server_stream.h"

#include <grpcpp/support/sync_stream.h>

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/internal/decode_row.h"
#include "client/internal/messaging_calls.h"
#include "common/grpc_status.h"

namespace msgq {

std::vector<ServerChannel> ChannelsTo(absl::Span<const std::string> targets) {
  std::vector<ServerChannel> servers;
  servers.reserve(targets.size());
  for (const std::string& target : targets) {
    servers.push_back({target, NewChannel(target)});
  }
  return servers;
}

ServerStream::ServerStream(ServerChannel server, size_t index, TableRef table,
                           const SubscriberOptions& options,
                           uint64_t jitter_seed, bool label_errors,
                           BoundedQueue<ReceivedMessage>& queue, DoneFn on_done)
    : name_(std::move(server.name)),
      index_(index),
      table_(std::move(table)),
      options_(options),
      jitter_seed_(jitter_seed),
      label_errors_(label_errors),
      on_done_(std::move(on_done)),
      stub_(v1::Messaging::NewStub(server.channel)),
      client_(server.channel, ClientOptions{.timeout = options.ack_timeout}),
      queue_(queue),
      batcher_(
          options.ack,
          [this](std::vector<std::string> ids) {
            return SendAcks(std::move(ids));
          },
          [this](const absl::Status& status) {
            if (options_.on_ack_error) options_.on_ack_error(Label(status));
          }),
      heartbeat_(
          options.auto_ack && options.group.empty()
              ? options.heartbeat
              : HeartbeatOptions{.max_extension = absl::ZeroDuration()},
          [this](const Delivery& delivery, absl::Duration duration) {
            return client_.Extend(table_, {delivery}, duration);
          },
          [this](const absl::Status& status) {
            if (options_.on_heartbeat_error) {
              options_.on_heartbeat_error(Label(status));
            }
          }) {}

ServerStream::~ServerStream() {
  Join();
  Close();
}

void ServerStream::Start() {
  {
    absl::MutexLock lock(&join_mu_);
    thread_ = std::thread([this] { RunStreamLoop(); });
  }
  heartbeat_.Start();
}

void ServerStream::RequestStop() {
  absl::MutexLock lock(&mu_);
  stop_requested_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

void ServerStream::Join() {
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

void ServerStream::Close() {
  heartbeat_.Close();
  batcher_.Close();
}

absl::Status ServerStream::Label(const absl::Status& status) const {
  if (!label_errors_ || status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("server ", name_, ": ", status.message()));
}

void ServerStream::AddStats(SubscriberStats& stats) const {
  stats.received += received_.load();
  stats.acked += acked_.load();
  stats.ack_calls += ack_calls_.load();
  stats.retried += retried_.load();
  stats.dead += dead_.load();
  stats.nack_calls += nack_calls_.load();
  const Heartbeat::Stats heartbeat = heartbeat_.stats();
  stats.extended += heartbeat.extended;
  stats.lost += heartbeat.lost;
  stats.extend_errors += heartbeat.errors;
  stats.streams_started += streams_started_.load();
  stats.reconnects += reconnects_.load();
}

void ServerStream::RunStreamLoop() {
  Backoff backoff(options_.backoff, jitter_seed_);
  bool ever_started = false;
  absl::Status final_status;
  while (true) {
    grpc::ClientContext context;
    // No wait-for-ready: each try fails at once while the server cannot be
    // reached, so that every failed try reaches on_stream_error and the
    // application can say the server is down; the next try comes after the
    // backoff, by which time the channel has retried the connection with its
    // own backoff (see NewChannel).
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
      final_status = Label(
          end.status.ok() ? absl::InternalError("stream ended without error")
                          : end.status);
      break;
    }
    const absl::Duration delay = backoff.Next();
    ++reconnects_;
    if (options_.on_stream_error) {
      options_.on_stream_error(
          Label(end.status.ok()
                    ? absl::UnavailableError("stream ended by server")
                    : end.status),
          delay);
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stop_requested_), delay);
    if (stop_requested_) break;
  }
  on_done_(final_status);
}

ServerStream::StreamEnd ServerStream::RunStream(grpc::ClientContext& context) {
  StreamEnd end;
  v1::MessageStreamRequest request;
  request.set_keyspace(table_.keyspace);
  request.set_name(table_.name);
  request.set_max_unacked(options_.max_unacked);
  request.set_group(options_.group);
  std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader =
      stub_->MessageStream(&context, request);

  std::shared_ptr<const Schema> schema;
  v1::MessageStreamResponse response;
  bool abandoned = false;  // stopped reading before the server ended it
  // Rows read after the queue closed (stopping), which no handler will get:
  // handed back with options_.release_unhandled.
  const bool release = options_.auto_ack && options_.release_unhandled;
  std::vector<Delivery> unpushed;
  while (!abandoned && reader->Read(&response)) {
    if (schema == nullptr) {
      absl::StatusOr<std::shared_ptr<const Schema>> parsed =
          SchemaFromFields(response.fields());
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
      if (options_.on_server_connected) {
        options_.on_server_connected(name_, *schema);
      }
      // Sent by msgqd with the first response (server/stream_reactor.h).
      const auto& metadata = context.GetServerInitialMetadata();
      if (auto it = metadata.find("msgq-standby");
          it != metadata.end() && options_.on_standby) {
        options_.on_standby(
            name_, absl::string_view(it->second.data(), it->second.size()));
      }
    }
    for (const v1::Row& row : response.rows()) {
      absl::StatusOr<Message> message = DecodeRow(schema, row, name_);
      if (!message.ok()) {
        end.status = message.status();
        end.protocol_error = true;
        abandoned = true;
        break;
      }
      ++received_;
      const Delivery delivery = message->delivery();
      if (abandoned) {  // stopping, releasing the rest of the response
        unpushed.push_back(delivery);
        continue;
      }
      if (!queue_.Push({*std::move(message), absl::Now(), index_})) {
        abandoned = true;  // stopping
        if (!release) break;
        unpushed.push_back(delivery);
      }
    }
    response.Clear();
  }
  // Finish() waits for the server to end the stream; do not wait for that
  // after walking away from it.
  if (abandoned) context.TryCancel();
  if (!unpushed.empty()) Release(std::move(unpushed));
  grpc::Status status = reader->Finish();
  if (!end.protocol_error) end.status = FromGrpcStatus(status);
  return end;
}

void ServerStream::LearnAckWait() {
  // An explicit ack_wait was set at construction; a disabled heartbeat needs
  // none.
  if (!heartbeat_.enabled() ||
      options_.heartbeat.ack_wait > absl::ZeroDuration()) {
    return;
  }
  absl::StatusOr<std::vector<v1::TableStatus>> tables =
      internal::ListTablesCall(client_);
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
    options_.on_heartbeat_error(Label(error));
  }
}

void ServerStream::Nack(const Message& message, const NackParams& params) {
  NackParams grouped = params;
  grouped.group = options_.group;
  absl::StatusOr<NackResult> nacked =
      client_.Nack(table_, {message.delivery()}, grouped);
  if (!nacked.ok()) {
    if (options_.on_nack_error) options_.on_nack_error(Label(nacked.status()));
    return;
  }
  ++nack_calls_;
  retried_ += nacked->retried;
  dead_ += nacked->dead;
}

void ServerStream::Release(std::vector<Delivery> deliveries) {
  absl::StatusOr<NackResult> nacked = client_.Nack(
      table_, deliveries,
      NackParams{.delay = absl::ZeroDuration(), .group = options_.group});
  if (!nacked.ok()) {
    if (options_.on_nack_error) options_.on_nack_error(Label(nacked.status()));
    return;
  }
  ++nack_calls_;
  retried_ += nacked->retried;
  dead_ += nacked->dead;
}

absl::Status ServerStream::SendAcks(std::vector<std::string> ids) {
  absl::StatusOr<int64_t> acked = client_.Ack(table_, ids, options_.group);
  if (!acked.ok()) return acked.status();
  ++ack_calls_;
  acked_ += *acked;
  return absl::OkStatus();
}

}  // namespace msgq
