#include "tools/chaos/subscribers.h"

#include <chrono>
#include <map>
#include <random>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq::chaos {

struct Subscribers::Stream {
  int index = 0;
  absl::Mutex mu;
  // Replaced by the reader after every stream end (see NewStub).
  std::shared_ptr<v1::Messaging::Stub> stub ABSL_GUARDED_BY(mu);
  grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;
  // Ids to ack, by the Unix ns from which they may be acked.
  std::multimap<int64_t, int64_t> pending ABSL_GUARDED_BY(mu);
};

Subscribers::Subscribers(Options options, Ledger* ledger)
    : options_(std::move(options)), ledger_(ledger) {}

Subscribers::~Subscribers() { Stop(); }

// A fresh channel (its own TCP connection). gRPC's reconnect backoff on a
// channel whose server was killed left streams failing for seconds after
// msgqd was back (and much longer with a short connect timeout), so the
// reader starts over with a new channel after every stream end instead.
std::shared_ptr<v1::Messaging::Stub> Subscribers::NewStub() const {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::Messaging::NewStub(grpc::CreateCustomChannel(
      options_.address, grpc::InsecureChannelCredentials(), args));
}

void Subscribers::Start() {
  for (int i = 0; i < options_.streams; ++i) {
    auto s = std::make_unique<Stream>();
    s->index = i;
    absl::MutexLock lock(&s->mu);
    s->stub = NewStub();
    streams_.push_back(std::move(s));
  }
  for (auto& s : streams_) {
    threads_.emplace_back([this, p = s.get()] { Read(p); });
    threads_.emplace_back([this, p = s.get()] { Ack(p); });
  }
}

void Subscribers::Stop() {
  if (stopping_.exchange(true)) return;
  for (auto& s : streams_) {
    absl::MutexLock lock(&s->mu);
    if (s->context != nullptr) s->context->TryCancel();
  }
  for (std::thread& t : threads_) t.join();
}

Subscribers::Stats Subscribers::stats() const {
  Stats s;
  s.rows = rows_.load();
  s.ack_calls = ack_calls_.load();
  s.ack_errors = ack_errors_.load();
  s.acked = acked_.load();
  s.skipped = skipped_.load();
  s.delayed = delayed_.load();
  s.reconnects = reconnects_.load();
  absl::MutexLock lock(&mu_);
  s.errors = errors_;
  return s;
}

void Subscribers::CountError(const char* what, const grpc::Status& status) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  std::string key =
      absl::StrCat(what, " ", code >= 0 && code <= 16 ? kNames[code] : "?",
                   ": ", status.error_message().substr(0, 60));
  absl::MutexLock lock(&mu_);
  ++errors_[key];
}

void Subscribers::Read(Stream* s) {
  std::mt19937_64 rng(options_.seed * 7919 + static_cast<uint64_t>(s->index));
  std::uniform_real_distribution<double> u(0, 1);
  v1::MessageStreamRequest request;
  request.set_keyspace(options_.keyspace);
  request.set_name(options_.table);
  while (!stopping_.load()) {
    grpc::ClientContext context;
    std::shared_ptr<v1::Messaging::Stub> stub;
    {
      absl::MutexLock lock(&s->mu);
      if (stopping_.load()) break;
      s->context = &context;
      stub = s->stub;
    }
    auto reader = stub->MessageStream(&context, request);
    v1::MessageStreamResponse response;
    std::vector<int64_t> ids;
    while (reader->Read(&response)) {
      const int64_t now = absl::ToUnixNanos(absl::Now());
      ids.clear();
      for (const v1::Row& row : response.rows()) {
        int64_t id = -1;
        if (row.lengths_size() > 0 && row.lengths(0) >= 0) {
          (void)absl::SimpleAtoi(
              absl::string_view(row.values().data(),
                                static_cast<size_t>(row.lengths(0))),
              &id);
        }
        ids.push_back(id);
      }
      if (ids.empty()) continue;  // the fields header
      ledger_->Delivered(ids, now, s->index);
      rows_.fetch_add(static_cast<int64_t>(ids.size()));
      absl::MutexLock lock(&s->mu);
      for (int64_t id : ids) {
        int64_t due = now;
        if (faulty_.load()) {
          const double r = u(rng);
          if (r < options_.skip_fraction) {
            skipped_.fetch_add(1);
            continue;
          }
          if (r < options_.skip_fraction + options_.delay_fraction) {
            delayed_.fetch_add(1);
            due += static_cast<int64_t>(
                u(rng) * 2 * absl::ToDoubleNanoseconds(options_.ack_wait));
          }
        }
        s->pending.emplace(due, id);
      }
    }
    grpc::Status end = reader->Finish();
    if (!stopping_.load()) CountError("stream", end);
    {
      absl::MutexLock lock(&s->mu);
      s->context = nullptr;
      s->stub = NewStub();
    }
    if (!stopping_.load()) {
      reconnects_.fetch_add(1);
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
}

void Subscribers::Ack(Stream* s) {
  while (!stopping_.load()) {
    std::vector<int64_t> ids;
    std::shared_ptr<v1::Messaging::Stub> stub;
    {
      absl::MutexLock lock(&s->mu);
      stub = s->stub;
      const int64_t now = absl::ToUnixNanos(absl::Now());
      for (auto it = s->pending.begin();
           it != s->pending.end() && it->first <= now && ids.size() < 500;) {
        ids.push_back(it->second);
        it = s->pending.erase(it);
      }
    }
    if (ids.empty()) {
      // Acks are not latency-critical here; a short poll keeps this simple.
      absl::SleepFor(absl::Milliseconds(20));
      continue;
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    v1::MessageAckRequest request;
    request.set_keyspace(options_.keyspace);
    request.set_name(options_.table);
    for (int64_t id : ids) request.add_ids(std::to_string(id));
    v1::MessageAckResponse response;
    ack_calls_.fetch_add(1);
    grpc::Status status = stub->MessageAck(&context, request, &response);
    const int64_t now = absl::ToUnixNanos(absl::Now());
    if (status.ok()) {
      acked_.fetch_add(response.acked());
      ledger_->Acked(ids, now);
      continue;
    }
    ack_errors_.fetch_add(1);
    CountError("ack", status);
    absl::MutexLock lock(&s->mu);
    for (int64_t id : ids) s->pending.emplace(now + 200 * 1000 * 1000, id);
  }
}

}  // namespace msgq::chaos
