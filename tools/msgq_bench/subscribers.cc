#include "tools/msgq_bench/subscribers.h"

#include <chrono>

#include "absl/strings/numbers.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

struct SubscriberPool::Stream {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Messaging::Stub> stub;

  absl::Mutex mu;
  // The open stream's context, for Stop() to cancel.
  grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;
  int acks_in_flight ABSL_GUARDED_BY(mu) = 0;
  // Ids of failed acks, sent again with the next ack.
  std::vector<std::string> retry ABSL_GUARDED_BY(mu);
};

struct SubscriberPool::AckCall {
  grpc::ClientContext context;
  v1::MessageAckRequest request;
  v1::MessageAckResponse response;
};

SubscriberPool::SubscriberPool(Options options, DeliveryLog* log)
    : options_(std::move(options)), log_(log) {}

SubscriberPool::~SubscriberPool() { Stop(); }

void SubscriberPool::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return;
    started_ = true;
  }
  for (int i = 0; i < options_.streams; ++i) {
    auto stream = std::make_unique<Stream>();
    grpc::ChannelArguments args;
    // Its own subchannel, hence its own TCP connection, like a separate
    // subscriber process.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("msgq_bench.stream", i);
    stream->channel = grpc::CreateCustomChannel(
        options_.address, grpc::InsecureChannelCredentials(), args);
    stream->stub = v1::Messaging::NewStub(stream->channel);
    streams_.push_back(std::move(stream));
  }
  for (auto& stream : streams_) {
    threads_.emplace_back([this, s = stream.get()] { ReadLoop(s); });
  }
}

void SubscriberPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
  }
  stopping_.store(true);
  for (auto& stream : streams_) {
    absl::MutexLock lock(&stream->mu);
    if (stream->context != nullptr) stream->context->TryCancel();
  }
  for (std::thread& t : threads_) t.join();
  for (auto& stream : streams_) {
    absl::MutexLock lock(&stream->mu);
    stream->mu.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &stream->acks_in_flight));
  }
}

bool SubscriberPool::WaitAcked(int64_t n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  target_ = n;
  if (acked_.load() >= n && reached_ns_ == 0) reached_ns_ = NowNs();
  auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return acked_.load() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

int64_t SubscriberPool::reached_ns() const {
  absl::MutexLock lock(&mu_);
  return reached_ns_;
}

SubscriberPool::Stats SubscriberPool::stats() const {
  Stats s;
  s.set_batches(batches_.load());
  s.set_rows(rows_.load());
  s.set_ack_rpcs(ack_rpcs_.load());
  s.set_ack_errors(ack_errors_.load());
  s.set_acked(acked_.load());
  s.set_stream_restarts(restarts_.load());
  return s;
}

void SubscriberPool::ReadLoop(Stream* stream) {
  v1::MessageStreamRequest request;
  request.set_keyspace(options_.keyspace);
  request.set_name(options_.table);
  bool first = true;
  while (!stopping_.load()) {
    if (!first) {
      restarts_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    first = false;
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&stream->mu);
      if (stopping_.load()) break;
      stream->context = &context;
    }
    std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader =
        stream->stub->MessageStream(&context, request);
    v1::MessageStreamResponse response;
    while (reader->Read(&response)) {
      if (response.rows_size() == 0) continue;  // the fields header
      const int64_t now = NowNs();
      auto call = std::make_unique<AckCall>();
      call->request.set_keyspace(options_.keyspace);
      call->request.set_name(options_.table);
      auto* ids = call->request.mutable_ids();
      ids->Reserve(response.rows_size());
      for (const v1::Row& row : response.rows()) {
        if (row.lengths_size() == 0 || row.lengths(0) < 0) continue;
        absl::string_view id(row.values().data(),
                             static_cast<size_t>(row.lengths(0)));
        int64_t n = 0;
        (void)absl::SimpleAtoi(id, &n);
        log_->Record(n, now);
        ids->Add(std::string(id));
      }
      batches_.fetch_add(1, std::memory_order_relaxed);
      rows_.fetch_add(response.rows_size(), std::memory_order_relaxed);
      SendAck(stream, std::move(call));
    }
    (void)reader->Finish();
    absl::MutexLock lock(&stream->mu);
    stream->context = nullptr;
  }
}

void SubscriberPool::SendAck(Stream* stream, std::unique_ptr<AckCall> call) {
  {
    absl::MutexLock lock(&stream->mu);
    for (std::string& id : stream->retry) call->request.add_ids(std::move(id));
    stream->retry.clear();
    if (options_.ack_mode == AckMode::kAsync) {
      const int max = options_.max_acks_in_flight;
      auto has_room = [stream, max]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                          stream->mu) { return stream->acks_in_flight < max; };
      stream->mu.Await(absl::Condition(&has_room));
    }
    ++stream->acks_in_flight;
  }
  ack_rpcs_.fetch_add(1, std::memory_order_relaxed);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
  AckCall* raw = call.release();
  if (options_.ack_mode == AckMode::kSync) {
    grpc::Status s =
        stream->stub->MessageAck(&raw->context, raw->request, &raw->response);
    OnAckDone(stream, raw, s.ok(), raw->response.acked());
    return;
  }
  stream->stub->async()->MessageAck(
      &raw->context, &raw->request, &raw->response,
      [this, stream, raw](grpc::Status s) {
        OnAckDone(stream, raw, s.ok(), raw->response.acked());
      });
}

void SubscriberPool::OnAckDone(Stream* stream, AckCall* call, bool ok,
                               int64_t acked) {
  std::unique_ptr<AckCall> owned(call);
  if (ok) {
    const int64_t total =
        acked_.fetch_add(acked, std::memory_order_relaxed) + acked;
    absl::MutexLock lock(&mu_);
    if (target_ >= 0 && total >= target_ && reached_ns_ == 0) {
      reached_ns_ = NowNs();
    }
  } else {
    ack_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  absl::MutexLock lock(&stream->mu);
  if (!ok) {
    for (std::string& id : *owned->request.mutable_ids()) {
      stream->retry.push_back(std::move(id));
    }
  }
  --stream->acks_in_flight;
}

}  // namespace msgq::bench
