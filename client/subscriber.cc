#include "msgq/subscriber.h"

#include <random>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "client/internal/bounded_queue.h"
#include "client/internal/server_stream.h"

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
  std::vector<ServerChannel> servers;
  servers.push_back({"", std::move(channel)});
  return Start(std::move(servers), std::move(table), std::move(handler),
               std::move(options));
}

absl::StatusOr<std::unique_ptr<Subscriber>> Subscriber::Start(
    std::vector<ServerChannel> servers, TableRef table, Handler handler,
    SubscriberOptions options) {
  if (servers.empty()) return absl::InvalidArgumentError("no servers");
  absl::flat_hash_set<std::string> names;
  for (const ServerChannel& server : servers) {
    if (server.channel == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("null channel for server '", server.name, "'"));
    }
    if (!names.insert(server.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("server '", server.name, "' given twice"));
    }
  }
  if (handler == nullptr) return absl::InvalidArgumentError("null handler");
  if (table.name.empty()) {
    return absl::InvalidArgumentError("empty table name");
  }
  if (options.concurrency < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "concurrency must be at least 1, got ", options.concurrency));
  }
  if (options.max_unacked < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_unacked must be >= 0, got ", options.max_unacked));
  }
  if (options.ack_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("ack_timeout must be positive");
  }
  std::unique_ptr<Subscriber> subscriber(
      new Subscriber(std::move(table), std::move(handler), std::move(options)));
  Subscriber* s = subscriber.get();
  const uint64_t seed = SeedOrRandom(s->options_.jitter_seed);
  const bool label_errors = servers.size() > 1;
  for (size_t i = 0; i < servers.size(); ++i) {
    s->streams_.push_back(std::make_unique<ServerStream>(
        std::move(servers[i]), i, s->table_, s->options_, seed + i,
        label_errors, *s->queue_,
        [s](const absl::Status& status) { s->OnStreamDone(status); }));
  }
  {
    absl::MutexLock lock(&s->join_mu_);
    for (int i = 0; i < s->options_.concurrency; ++i) {
      s->workers_.emplace_back([s] { s->RunWorker(); });
    }
  }
  for (std::unique_ptr<ServerStream>& stream : s->streams_) stream->Start();
  return subscriber;
}

Subscriber::Subscriber(TableRef table, Handler handler,
                       SubscriberOptions options)
    : table_(std::move(table)),
      handler_(std::move(handler)),
      options_(std::move(options)),
      queue_(std::make_unique<BoundedQueue<ReceivedMessage>>(
          options_.queue_capacity)) {}

Subscriber::~Subscriber() { Stop(); }

void Subscriber::RequestStop() {
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
  }
  for (const std::unique_ptr<ServerStream>& stream : streams_) {
    stream->RequestStop();
  }
  if (!ReleasesUnhandled()) {
    queue_->Close();
    return;
  }
  std::deque<ReceivedMessage> taken = queue_->CloseAndTake();
  absl::MutexLock lock(&mu_);
  for (ReceivedMessage& m : taken) unhandled_.push_back(std::move(m));
}

bool Subscriber::ReleasesUnhandled() const {
  return options_.auto_ack && options_.release_unhandled;
}

void Subscriber::OnStreamDone(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    ++streams_done_;
    if (status.ok() || !final_status_.ok()) return;
    final_status_ = status;
  }
  // One server's fatal error ends the subscription on every server.
  RequestStop();
}

absl::Status Subscriber::Wait() {
  absl::MutexLock lock(&mu_);
  auto all_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return streams_done_ == streams_.size();
  };
  mu_.Await(absl::Condition(&all_done));
  return final_status_;
}

bool Subscriber::done() const {
  absl::MutexLock lock(&mu_);
  return streams_done_ == streams_.size();
}

void Subscriber::Stop() {
  RequestStop();
  for (const std::unique_ptr<ServerStream>& stream : streams_) stream->Join();
  {
    absl::MutexLock lock(&join_mu_);
    for (std::thread& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
  }
  std::deque<ReceivedMessage> unhandled;
  {
    absl::MutexLock lock(&mu_);
    unhandled.swap(unhandled_);
  }
  std::vector<std::vector<Delivery>> by_stream(streams_.size());
  for (const ReceivedMessage& m : unhandled) {
    by_stream[m.origin].push_back(m.message.delivery());
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!by_stream[i].empty()) streams_[i]->Release(std::move(by_stream[i]));
  }
  // Only now: the workers may have queued acks until they were joined.
  for (const std::unique_ptr<ServerStream>& stream : streams_) stream->Close();
}

Subscriber::Stats Subscriber::stats() const {
  Stats stats;
  stats.handled = handled_.load();
  stats.failed = failed_.load();
  for (const std::unique_ptr<ServerStream>& stream : streams_) {
    stream->AddStats(stats);
  }
  return stats;
}

void Subscriber::RunWorker() {
  while (std::optional<ReceivedMessage> received = queue_->Pop()) {
    const Message& message = received->message;
    ServerStream& origin = *streams_[received->origin];
    const Heartbeat::Ticket ticket =
        origin.heartbeat().Begin(message.delivery(), received->at);
    HandlerResult result = handler_(message);
    origin.heartbeat().End(ticket);
    if (result.kind() == HandlerResult::Kind::kAck) {
      ++handled_;
    } else {
      ++failed_;
    }
    if (options_.auto_ack) Settle(origin, message, result);
  }
}

void Subscriber::Settle(ServerStream& origin, const Message& message,
                        const HandlerResult& result) {
  if (result.kind() == HandlerResult::Kind::kAck) {
    origin.Ack(message.id());
    return;
  }
  origin.Nack(message, NackParams{
                           .delay = result.delay(),
                           .reason = result.reason(),
                           .dead = result.kind() == HandlerResult::Kind::kDead,
                       });
}

}  // namespace msgq
