#include "tools/msgq_bench/subscribers.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/numbers.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

struct SubscriberPool::Stream {
  std::string table;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Messaging::Stub> stub;

  absl::Mutex mu;
  // Thread reader: the open stream's context, for Stop() to cancel.
  grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;
  int acks_in_flight ABSL_GUARDED_BY(mu) = 0;
  // Ids of failed acks, sent again with the next ack.
  std::vector<std::string> retry ABSL_GUARDED_BY(mu);
  // Callback reader: the open call, and the ones that ended (kept until the
  // pool goes, as gRPC may still be returning from their OnDone).
  std::unique_ptr<Reader> reader ABSL_GUARDED_BY(mu);
  std::vector<std::unique_ptr<Reader>> ended ABSL_GUARDED_BY(mu);
  // Callback reader: no read outstanding until an ack returns (sync acks,
  // or async with max_acks_in_flight reached: `pending_ack` then waits).
  bool read_paused ABSL_GUARDED_BY(mu) = false;
  std::unique_ptr<AckCall> pending_ack ABSL_GUARDED_BY(mu);
};

struct SubscriberPool::AckCall {
  grpc::ClientContext context;
  v1::MessageAckRequest request;
  v1::MessageAckResponse response;
};

// One MessageStream call of the callback reader. Its read flow holds the
// call open (a hold) from StartCall until a read fails, so a read paused for
// an ack can be resumed from the ack's callback.
class SubscriberPool::Reader
    : public grpc::ClientReadReactor<v1::MessageStreamResponse> {
 public:
  Reader(SubscriberPool* pool, Stream* stream) : pool_(pool), stream_(stream) {
    request_.set_keyspace(pool->options_.keyspace);
    request_.set_name(stream->table);
  }
  void Start() {
    stream_->stub->async()->MessageStream(&context_, &request_, this);
    AddHold();
    StartRead(&response_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void ResumeRead() { StartRead(&response_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      RemoveHold();  // no more reads: OnDone follows
      return;
    }
    if (response_.rows_size() == 0) {  // the fields header
      StartRead(&response_);
      return;
    }
    if (pool_->OnBatch(stream_, pool_->Receive(stream_, response_))) {
      StartRead(&response_);
    }
  }
  void OnDone(const grpc::Status& /*status*/) override {
    pool_->OnReaderDone(stream_);
  }

 private:
  SubscriberPool* const pool_;
  Stream* const stream_;
  grpc::ClientContext context_;
  v1::MessageStreamRequest request_;
  v1::MessageStreamResponse response_;
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
    stream->table =
        options_.tables[static_cast<size_t>(i) % options_.tables.size()];
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
  if (options_.callback_reader) {
    for (auto& stream : streams_) OpenReader(stream.get());
    restarter_ = std::thread([this] { RestartLoop(); });
    return;
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
    if (stream->reader != nullptr) stream->reader->Cancel();
  }
  for (std::thread& t : threads_) t.join();
  if (restarter_.joinable()) restarter_.join();
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &live_readers_));
  }
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
  request.set_name(stream->table);
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
      SendAck(stream, Receive(stream, response));
    }
    (void)reader->Finish();
    absl::MutexLock lock(&stream->mu);
    stream->context = nullptr;
  }
}

std::unique_ptr<SubscriberPool::AckCall> SubscriberPool::Receive(
    Stream* stream, const v1::MessageStreamResponse& response) {
  const int64_t now = NowNs();
  auto call = std::make_unique<AckCall>();
  call->request.set_keyspace(options_.keyspace);
  call->request.set_name(stream->table);
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
  return call;
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
  if (options_.ack_mode == AckMode::kAsync) {
    IssueAck(stream, std::move(call));
    return;
  }
  ack_rpcs_.fetch_add(1, std::memory_order_relaxed);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
  AckCall* raw = call.release();
  grpc::Status s =
      stream->stub->MessageAck(&raw->context, raw->request, &raw->response);
  OnAckDone(stream, raw, s.ok(), raw->response.acked());
}

void SubscriberPool::IssueAck(Stream* stream, std::unique_ptr<AckCall> call) {
  ack_rpcs_.fetch_add(1, std::memory_order_relaxed);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
  AckCall* raw = call.release();
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
  std::unique_ptr<AckCall> next;
  Reader* resume = nullptr;
  {
    absl::MutexLock lock(&stream->mu);
    if (!ok) {
      for (std::string& id : *owned->request.mutable_ids()) {
        stream->retry.push_back(std::move(id));
      }
    }
    --stream->acks_in_flight;
    if (stream->read_paused) {  // callback reader only
      next = std::move(stream->pending_ack);
      if (next != nullptr) {
        for (std::string& id : stream->retry) {
          next->request.add_ids(std::move(id));
        }
        stream->retry.clear();
        ++stream->acks_in_flight;
      }
      stream->read_paused = false;
      resume = stream->reader.get();
    }
  }
  if (next != nullptr) IssueAck(stream, std::move(next));
  // The paused read flow's hold keeps the Reader until it reads again.
  if (resume != nullptr) resume->ResumeRead();
}

void SubscriberPool::OpenReader(Stream* stream) {
  Reader* reader = nullptr;
  {
    absl::MutexLock lock(&stream->mu);
    if (stopping_.load()) return;
    if (stream->reader != nullptr) {
      stream->ended.push_back(std::move(stream->reader));
    }
    stream->reader = std::make_unique<Reader>(this, stream);
    reader = stream->reader.get();
  }
  {
    absl::MutexLock lock(&mu_);
    ++live_readers_;
  }
  // Outside the lock: a reaction may run inline. A Stop() that cancelled
  // before the call started cancels it as it starts.
  reader->Start();
}

bool SubscriberPool::OnBatch(Stream* stream, std::unique_ptr<AckCall> call) {
  {
    absl::MutexLock lock(&stream->mu);
    for (std::string& id : stream->retry) call->request.add_ids(std::move(id));
    stream->retry.clear();
    const bool sync = options_.ack_mode == AckMode::kSync;
    if (!sync && stream->acks_in_flight >= options_.max_acks_in_flight) {
      // No room: the ack waits, and so does the next read.
      stream->pending_ack = std::move(call);
      stream->read_paused = true;
      return false;
    }
    ++stream->acks_in_flight;
    // Sync: the next read waits for this ack.
    if (sync) stream->read_paused = true;
  }
  IssueAck(stream, std::move(call));
  return options_.ack_mode != AckMode::kSync;
}

void SubscriberPool::OnReaderDone(Stream* stream) {
  absl::MutexLock lock(&mu_);
  --live_readers_;
  if (!stopping_.load()) {
    restarts_due_.push_back({NowNs() + 50 * 1000 * 1000, stream});
  }
}

void SubscriberPool::RestartLoop() {
  while (true) {
    std::vector<Stream*> due;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_ || !restarts_due_.empty();
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Milliseconds(100));
      if (stopped_) return;
      const int64_t now = NowNs();
      auto not_due = [now](const Restart& r) { return r.due_ns > now; };
      auto first_due = std::stable_partition(restarts_due_.begin(),
                                             restarts_due_.end(), not_due);
      for (auto it = first_due; it != restarts_due_.end(); ++it) {
        due.push_back(it->stream);
      }
      restarts_due_.erase(first_due, restarts_due_.end());
      if (due.empty()) {
        // Some are not due yet: look again in 10 ms (or at Stop()).
        mu_.AwaitWithTimeout(absl::Condition(
                                 +[](bool* b) { return *b; }, &stopped_),
                             absl::Milliseconds(10));
        continue;
      }
    }
    for (Stream* stream : due) {
      restarts_.fetch_add(1);
      OpenReader(stream);
    }
  }
}

}  // namespace msgq::bench
