#include "tools/chaos/subscribers.h"

#include <mysql.h>
#include <sys/socket.h>

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
#include "tools/chaos/mysql_client.h"

namespace msgq::chaos {

std::string GrpcCodeName(grpc::StatusCode code) {
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
  const int c = static_cast<int>(code);
  return c >= 0 && c <= 16 ? kNames[c] : "?";
}

struct Subscribers::Stream {
  int index = 0;
  bool mysql = false;  // a MySQL-protocol stream (ReadMysql)
  absl::Mutex mu;
  // The MySQL stream's socket and connection id while logged in.
  int mysql_fd ABSL_GUARDED_BY(mu) = -1;
  uint32_t mysql_id ABSL_GUARDED_BY(mu) = 0;
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
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options_.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = options_.tls_ca_pem;
    credentials = grpc::SslCredentials(tls);
  }
  return v1::Messaging::NewStub(
      grpc::CreateCustomChannel(options_.address, credentials, args));
}

void Subscribers::Prepare(grpc::ClientContext* context) const {
  if (!options_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
}

void Subscribers::Start() {
  for (int i = 0; i < options_.streams + options_.mysql_streams; ++i) {
    auto s = std::make_unique<Stream>();
    s->index = i;
    s->mysql = i >= options_.streams;
    absl::MutexLock lock(&s->mu);
    s->stub = NewStub();
    streams_.push_back(std::move(s));
  }
  for (auto& s : streams_) {
    if (s->mysql) {
      threads_.emplace_back([this, p = s.get()] { ReadMysql(p); });
    } else {
      threads_.emplace_back([this, p = s.get()] { Read(p); });
    }
    threads_.emplace_back([this, p = s.get()] { Ack(p); });
  }
}

void Subscribers::Stop() {
  if (stopping_.exchange(true)) return;
  for (auto& s : streams_) {
    absl::MutexLock lock(&s->mu);
    if (s->context != nullptr) s->context->TryCancel();
    if (s->mysql_fd >= 0) shutdown(s->mysql_fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_) t.join();
}

std::vector<uint32_t> Subscribers::MysqlConnectionIds() const {
  std::vector<uint32_t> ids;
  for (const auto& s : streams_) {
    absl::MutexLock lock(&s->mu);
    if (s->mysql_id != 0) ids.push_back(s->mysql_id);
  }
  return ids;
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
  s.mysql_rows = mysql_rows_.load();
  s.mysql_logins = mysql_logins_.load();
  absl::MutexLock lock(&mu_);
  s.errors = errors_;
  return s;
}

void Subscribers::CountError(const char* what, const grpc::Status& status) {
  std::string key = absl::StrCat(what, " ", GrpcCodeName(status.error_code()),
                                 ": ", status.error_message().substr(0, 60));
  absl::MutexLock lock(&mu_);
  ++errors_[key];
}

void Subscribers::CountError(const std::string& what) {
  absl::MutexLock lock(&mu_);
  ++errors_[what];
}

void Subscribers::Read(Stream* s) {
  std::mt19937_64 rng(options_.seed * 7919 + static_cast<uint64_t>(s->index));
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
    Prepare(&context);
    auto reader = stub->MessageStream(&context, request);
    v1::MessageStreamResponse response;
    std::vector<int64_t> ids;
    std::vector<int64_t> epochs;
    while (reader->Read(&response)) {
      const int64_t now = absl::ToUnixNanos(absl::Now());
      ids.clear();
      epochs.clear();
      for (const v1::Row& row : response.rows()) {
        int64_t id = -1;
        if (row.lengths_size() > 0 && row.lengths(0) >= 0) {
          (void)absl::SimpleAtoi(
              absl::string_view(row.values().data(),
                                static_cast<size_t>(row.lengths(0))),
              &id);
        }
        ids.push_back(id);
        epochs.push_back(row.epoch());
      }
      if (ids.empty()) continue;  // the fields header
      Receive(s, ids, epochs, now, rng);
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

void Subscribers::Receive(Stream* s, const std::vector<int64_t>& ids,
                          const std::vector<int64_t>& epochs, int64_t now,
                          std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  ledger_->Delivered(ids, epochs, now, s->index);
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

void Subscribers::ReadMysql(Stream* s) {
  std::mt19937_64 rng(options_.seed * 7919 + static_cast<uint64_t>(s->index));
  const std::string sql =
      absl::StrCat("stream * from ", options_.keyspace, ".", options_.table);
  while (!stopping_.load()) {
    MysqlClient::Login login;
    login.port = options_.mysql_port;
    login.user = options_.mysql_user;
    login.password = options_.token;
    login.database = options_.keyspace;
    login.ca_file = options_.mysql_ca_file;
    login.timeout = options_.mysql_read_timeout;
    absl::StatusOr<std::unique_ptr<MysqlClient>> c =
        MysqlClient::Connect(login, nullptr);
    if (!c.ok()) {
      if (!stopping_.load()) {
        CountError(absl::StrCat("mysql login ", c.status().message()));
        absl::SleepFor(absl::Milliseconds(500));
      }
      continue;
    }
    mysql_logins_.fetch_add(1);
    {
      absl::MutexLock lock(&s->mu);
      if (stopping_.load()) break;
      s->mysql_fd = (*c)->fd();
      s->mysql_id = (*c)->id();
    }
    MYSQL* m = (*c)->get();
    MYSQL_RES* res = nullptr;
    if (mysql_real_query(m, sql.data(), sql.size()) == 0) {
      res = mysql_use_result(m);
    }
    if (res != nullptr) {
      // The id and epoch columns by name (the stream sends the table's
      // columns).
      size_t id_column = 0;
      const unsigned int n = mysql_num_fields(res);
      size_t epoch_column = n;
      MYSQL_FIELD* fields = mysql_fetch_fields(res);
      for (unsigned int i = 0; i < n; ++i) {
        if (std::string(fields[i].name) == "id") id_column = i;
        if (std::string(fields[i].name) == "epoch") epoch_column = i;
      }
      while (MYSQL_ROW row = mysql_fetch_row(res)) {
        const int64_t now = absl::ToUnixNanos(absl::Now());
        int64_t id = -1;
        if (id_column < n && row[id_column] != nullptr) {
          (void)absl::SimpleAtoi(row[id_column], &id);
        }
        int64_t epoch = kUnknownEpoch;
        if (epoch_column < n && row[epoch_column] != nullptr &&
            !absl::SimpleAtoi(row[epoch_column], &epoch)) {
          epoch = kUnknownEpoch;
        }
        mysql_rows_.fetch_add(1);
        Receive(s, {id}, {epoch}, now, rng);
      }
    }
    if (!stopping_.load()) {
      CountError(
          absl::StrCat("mysql stream ", MysqlOutcome((*c)->LastError())));
    }
    {
      absl::MutexLock lock(&s->mu);
      s->mysql_fd = -1;
      s->mysql_id = 0;
    }
    // Freeing an unfinished result reads to its end: only on a connection
    // that is already broken (the loop above ended on an error).
    if (res != nullptr) mysql_free_result(res);
    c->reset();
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
    Prepare(&context);
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
