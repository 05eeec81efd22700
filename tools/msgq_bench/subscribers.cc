#include "tools/msgq_bench/subscribers.h"

#include <chrono>
#include <unordered_map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"
#include "tools/msgq_bench/clock.h"

namespace msgq::bench {

void DeliveryLog::Record(int64_t id, int64_t now_ns) {
  if (id < 1 || id >= static_cast<int64_t>(first_ns_.size())) {
    unexpected_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  int64_t first = 0;
  if (!first_ns_[id].compare_exchange_strong(first, now_ns,
                                             std::memory_order_relaxed)) {
    duplicates_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  unique_.fetch_add(1, std::memory_order_relaxed);
  int64_t earliest = earliest_ns_.load(std::memory_order_relaxed);
  while ((earliest == 0 || now_ns < earliest) &&
         !earliest_ns_.compare_exchange_weak(earliest, now_ns,
                                             std::memory_order_relaxed)) {
  }
}

struct SubscriberPool::Stream {
  std::string table;
  std::unique_ptr<v1::Messaging::Stub> stub;

  absl::Mutex mu;
  // The open call, null between a Reader's end and the next.
  Reader* reader ABSL_GUARDED_BY(mu) = nullptr;
  int acks_in_flight ABSL_GUARDED_BY(mu) = 0;
  // Ids of failed acks, sent again with the next ack.
  std::vector<std::string> retry ABSL_GUARDED_BY(mu);
  // The ack of the last batch read when max_acks_in_flight were in flight:
  // it waits for one of them to return, and so does the next read.
  std::unique_ptr<AckCall> pending_ack ABSL_GUARDED_BY(mu);

  // Counts `call` in flight and adds the ids of failed acks to it.
  void BeginAck(AckCall* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

struct SubscriberPool::AckCall {
  int64_t issued_ns = 0;  // bench clock, when the RPC was sent
  grpc::ClientContext context;
  v1::MessageAckRequest request;
  v1::MessageAckResponse response;
};

void SubscriberPool::Stream::BeginAck(AckCall* call) {
  for (std::string& id : retry) call->request.add_ids(std::move(id));
  retry.clear();
  ++acks_in_flight;
}

// One MessageStream call. Its read flow holds the call open (a hold) from
// StartCall until a read fails, so a read paused for an ack can be resumed
// from the ack's callback. Deletes itself when done.
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
      RemoveHold();                           // no more reads: OnDone follows
    } else if (response_.rows_size() == 0 ||  // the fields header
               pool_->OnBatch(stream_, response_)) {
      StartRead(&response_);
    }
  }
  void OnDone(const grpc::Status& /*status*/) override {
    pool_->OnReaderDone(stream_);
    delete this;
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
  for (int i = 0; i < options_.streams; ++i) {
    auto stream = std::make_unique<Stream>();
    stream->table = options_.tables[i % options_.tables.size()];
    grpc::ChannelArguments args;
    // Its own subchannel, hence its own TCP connection, like a separate
    // subscriber process.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("msgq_bench.stream", i);
    stream->stub = v1::Messaging::NewStub(grpc::CreateCustomChannel(
        options_.address, grpc::InsecureChannelCredentials(), args));
    streams_.push_back(std::move(stream));
  }
  for (auto& stream : streams_) OpenReader(stream.get());
  restarter_ = std::thread([this] { RestartLoop(); });
}

void SubscriberPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  stopping_.store(true);
  for (auto& stream : streams_) {
    absl::MutexLock lock(&stream->mu);
    if (stream->reader != nullptr) stream->reader->Cancel();
  }
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

int64_t SubscriberPool::WaitAcked(int64_t n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  target_ = n;
  if (acked_.load() >= n && reached_ns_ == 0) reached_ns_ = NowNs();
  auto reached = [this, n] { return acked_.load() >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout) ? reached_ns_
                                                                  : 0;
}

pb::Subscribers SubscriberPool::stats() const {
  pb::Subscribers s;
  s.set_batches(batches_.load());
  s.set_rows(rows_.load());
  s.set_ack_rpcs(ack_rpcs_.load());
  s.set_ack_errors(ack_errors_.load());
  s.set_acked(acked_.load());
  s.set_stream_restarts(restarts_.load());
  std::vector<int64_t> rtt;
  {
    absl::MutexLock lock(&mu_);
    rtt = ack_rtt_ns_;
  }
  *s.mutable_ack_latency() = Summarize(rtt);
  return s;
}

bool SubscriberPool::OnBatch(Stream* stream,
                             const v1::MessageStreamResponse& response) {
  const int64_t now = NowNs();
  auto call = std::make_unique<AckCall>();
  call->request.set_keyspace(options_.keyspace);
  call->request.set_name(stream->table);
  call->request.mutable_ids()->Reserve(response.rows_size());
  for (const v1::Row& row : response.rows()) {
    if (row.lengths_size() == 0 || row.lengths(0) < 0) continue;
    absl::string_view id(row.values().data(), row.lengths(0));
    int64_t n = 0;
    (void)absl::SimpleAtoi(id, &n);
    log_->Record(n, now);
    call->request.add_ids(std::string(id));
  }
  batches_.fetch_add(1, std::memory_order_relaxed);
  rows_.fetch_add(response.rows_size(), std::memory_order_relaxed);
  {
    absl::MutexLock lock(&stream->mu);
    if (stream->acks_in_flight >= options_.max_acks_in_flight) {
      stream->pending_ack = std::move(call);  // OnAckDone sends it
      return false;
    }
    stream->BeginAck(call.get());
  }
  IssueAck(stream, std::move(call));
  return true;
}

void SubscriberPool::IssueAck(Stream* stream, std::unique_ptr<AckCall> call) {
  ack_rpcs_.fetch_add(1, std::memory_order_relaxed);
  call->issued_ns = NowNs();
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
  AckCall* raw = call.release();
  stream->stub->async()->MessageAck(
      &raw->context, &raw->request, &raw->response,
      [this, stream, raw](grpc::Status s) {
        OnAckDone(stream, std::unique_ptr<AckCall>(raw), s.ok());
      });
}

void SubscriberPool::OnAckDone(Stream* stream, std::unique_ptr<AckCall> call,
                               bool ok) {
  if (ok) {
    const int64_t rtt = NowNs() - call->issued_ns;
    // Under mu_, so WaitAcked cannot return before reached_ns_ is set.
    absl::MutexLock lock(&mu_);
    if (ack_rtt_ns_.size() < kMaxAckSamples) ack_rtt_ns_.push_back(rtt);
    const int64_t total =
        acked_.fetch_add(call->response.acked()) + call->response.acked();
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
      for (std::string& id : *call->request.mutable_ids()) {
        stream->retry.push_back(std::move(id));
      }
    }
    --stream->acks_in_flight;
    if (stream->pending_ack != nullptr) {
      next = std::move(stream->pending_ack);
      stream->BeginAck(next.get());
      resume = stream->reader;
    }
  }
  if (next == nullptr) return;
  IssueAck(stream, std::move(next));
  // The paused read flow's hold keeps the Reader until it reads again.
  resume->ResumeRead();
}

void SubscriberPool::OpenReader(Stream* stream) {
  Reader* reader = nullptr;
  {
    absl::MutexLock lock(&stream->mu);
    if (stopping_.load()) return;
    stream->reader = reader = new Reader(this, stream);
  }
  {
    absl::MutexLock lock(&mu_);
    ++live_readers_;
  }
  // Outside the lock: a reaction may run inline. A Stop() that cancelled
  // before the call started cancels it as it starts.
  reader->Start();
}

void SubscriberPool::OnReaderDone(Stream* stream) {
  {
    absl::MutexLock lock(&stream->mu);
    stream->reader = nullptr;
  }
  absl::MutexLock lock(&mu_);
  --live_readers_;
  if (!stopping_.load()) {
    restarts_due_.emplace_back(NowNs() + 50 * 1000 * 1000, stream);
  }
}

void SubscriberPool::RestartLoop() {
  while (true) {
    std::vector<std::pair<int64_t, Stream*>> due;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_ || !restarts_due_.empty();
      };
      mu_.Await(absl::Condition(&wake));
      if (stopped_) return;
      due.swap(restarts_due_);
    }
    for (const auto& [due_ns, stream] : due) {  // in the order they ended
      SleepUntilNs(due_ns);
      restarts_.fetch_add(1);
      OpenReader(stream);
    }
  }
}

absl::StatusOr<std::vector<v1::TableStatus>> WaitForTables(
    const std::string& address, const std::string& keyspace,
    const std::vector<std::string>& tables, int streams,
    absl::Duration timeout) {
  auto stub = v1::Messaging::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  const absl::Time deadline = absl::Now() + timeout;
  const int n = tables.size();
  std::string why = "not listed";
  int waiting = n;
  std::string first = tables.front();
  while (absl::Now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1::ListTablesResponse resp;
    if (grpc::Status s = stub->ListTables(&ctx, {}, &resp); !s.ok()) {
      why = s.error_message();
    } else {
      std::unordered_map<std::string, const v1::TableStatus*> by_name;
      for (const v1::TableStatus& t : resp.tables()) {
        if (t.keyspace() == keyspace) by_name[t.name()] = &t;
      }
      std::vector<v1::TableStatus> ready;
      waiting = 0;
      for (int i = 0; i < n; ++i) {
        auto it = by_name.find(tables[i]);
        const v1::TableStatus* t = it == by_name.end() ? nullptr : it->second;
        // Stream j of the pool reads table j mod n.
        const int subscribers = streams / n + (i < streams % n ? 1 : 0);
        if (t != nullptr && t->loaded() && t->subscribers() >= subscribers) {
          ready.push_back(*t);
        } else if (waiting++ == 0) {
          first = tables[i];
          why = t == nullptr   ? "not listed"
                : !t->loaded() ? t->error()
                               : absl::StrCat(t->subscribers(), " of ",
                                              subscribers, " subscribers");
        }
      }
      if (waiting == 0) return ready;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "msgqd at ", address, ": ", waiting, " of ", n, " tables of ", keyspace,
      " not ready, the first ", first, ": ", why));
}

}  // namespace msgq::bench
