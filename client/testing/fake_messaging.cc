#include "client/testing/fake_messaging.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace msgq::testing {

v1::MessageStreamResponse Fields(const std::vector<std::string>& names) {
  v1::MessageStreamResponse response;
  for (size_t i = 0; i < names.size(); ++i) {
    v1::Field* field = response.add_fields();
    field->set_name(names[i]);
    field->set_type(i == 0 ? "bigint" : "text");
  }
  return response;
}

v1::MessageStreamResponse Rows(
    const std::vector<std::vector<std::optional<std::string>>>& rows) {
  v1::MessageStreamResponse response;
  for (const auto& values : rows) {
    v1::Row* row = response.add_rows();
    for (const std::optional<std::string>& value : values) {
      if (value.has_value()) {
        row->add_lengths(static_cast<int64_t>(value->size()));
        row->mutable_values()->append(*value);
      } else {
        row->add_lengths(-1);
      }
    }
  }
  return response;
}

FakeMessaging::FakeMessaging() : delay_(absl::ZeroDuration()) {}

FakeMessaging::~FakeMessaging() { Shutdown(); }

absl::Status FakeMessaging::Start(int port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port),
                           grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::InternalError("cannot start the fake server");
  }
  return absl::OkStatus();
}

absl::Status FakeMessaging::StartOnUnixSocket(const std::string& path) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", path),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::InternalError(absl::StrCat("cannot listen on unix:", path));
  }
  unix_path_ = path;
  return absl::OkStatus();
}

void FakeMessaging::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }
}

std::string FakeMessaging::address() const {
  if (!unix_path_.empty()) return absl::StrCat("unix:", unix_path_);
  return absl::StrCat("127.0.0.1:", port_);
}

void FakeMessaging::AddStream(Script script) {
  absl::MutexLock lock(&mu_);
  scripts_.push_back(std::move(script));
}

void FakeMessaging::SetDefaultStream(Script script) {
  absl::MutexLock lock(&mu_);
  default_script_ = std::move(script);
}

void FakeMessaging::Send(v1::MessageStreamResponse response) {
  absl::MutexLock lock(&mu_);
  live_.push_back(std::move(response));
}

void FakeMessaging::EndOpenStreams(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  end_open_ = std::move(status);
  ++end_generation_;
}

void FakeMessaging::SetAckStatus(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  ack_status_ = std::move(status);
}

void FakeMessaging::SetDelay(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  delay_ = delay;
}

void FakeMessaging::SetTables(v1::ListTablesResponse tables) {
  absl::MutexLock lock(&mu_);
  tables_ = std::move(tables);
}

void FakeMessaging::SetFailureRpcStatus(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  failure_rpc_status_ = std::move(status);
}

void FakeMessaging::MarkLost(std::string id) {
  absl::MutexLock lock(&mu_);
  lost_.insert(std::move(id));
}

void FakeMessaging::SetDeadMessages(std::vector<v1::DeadMessage> messages) {
  absl::MutexLock lock(&mu_);
  dead_ = std::move(messages);
}

std::vector<v1::MessageNackRequest> FakeMessaging::nack_requests() const {
  absl::MutexLock lock(&mu_);
  return nack_requests_;
}

std::vector<v1::MessageExtendRequest> FakeMessaging::extend_requests() const {
  absl::MutexLock lock(&mu_);
  return extend_requests_;
}

std::vector<v1::RedriveRequest> FakeMessaging::redrive_requests() const {
  absl::MutexLock lock(&mu_);
  return redrive_requests_;
}

std::vector<v1::ListDeadRequest> FakeMessaging::list_dead_requests() const {
  absl::MutexLock lock(&mu_);
  return list_dead_requests_;
}

bool FakeMessaging::WaitForNackCalls(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return nack_requests_.size() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

bool FakeMessaging::WaitForExtendCalls(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return extend_requests_.size() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

std::vector<v1::MessageStreamRequest> FakeMessaging::stream_requests() const {
  absl::MutexLock lock(&mu_);
  return stream_requests_;
}

std::vector<v1::MessageAckRequest> FakeMessaging::ack_requests() const {
  absl::MutexLock lock(&mu_);
  return ack_requests_;
}

std::vector<std::string> FakeMessaging::acked_ids() const {
  absl::MutexLock lock(&mu_);
  return acked_ids_;
}

int FakeMessaging::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_streams_;
}

bool FakeMessaging::WaitForStreamCalls(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stream_requests_.size() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

bool FakeMessaging::WaitForOpenStreams(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return open_streams_ == n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

bool FakeMessaging::WaitForAckedIds(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return acked_ids_.size() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

grpc::Status FakeMessaging::MessageStream(
    grpc::ServerContext* context, const v1::MessageStreamRequest* request,
    grpc::ServerWriter<v1::MessageStreamResponse>* writer) {
  Script script;
  int generation;
  {
    absl::MutexLock lock(&mu_);
    stream_requests_.push_back(*request);
    if (scripts_.empty()) {
      script = default_script_;
    } else {
      script = std::move(scripts_.front());
      scripts_.pop_front();
    }
    generation = end_generation_;
  }
  for (const v1::MessageStreamResponse& response : script.responses) {
    if (!writer->Write(response)) return grpc::Status::CANCELLED;
  }
  if (!script.hold_open) return script.end;

  absl::MutexLock lock(&mu_);
  ++open_streams_;
  while (true) {
    if (shutting_down_) {
      --open_streams_;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
    }
    if (end_generation_ != generation) {
      --open_streams_;
      return *end_open_;
    }
    if (context->IsCancelled()) {
      --open_streams_;
      return grpc::Status::CANCELLED;
    }
    if (!live_.empty()) {
      v1::MessageStreamResponse response = std::move(live_.front());
      live_.pop_front();
      mu_.Unlock();
      const bool written = writer->Write(response);
      mu_.Lock();
      if (!written) {
        --open_streams_;
        return grpc::Status::CANCELLED;
      }
      continue;
    }
    // The sync API has no cancellation callback, so poll for it.
    auto has_news = [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shutting_down_ || end_generation_ != generation || !live_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&has_news), absl::Milliseconds(5));
  }
}

grpc::Status FakeMessaging::MessageAck(grpc::ServerContext* context,
                                       const v1::MessageAckRequest* request,
                                       v1::MessageAckResponse* response) {
  absl::MutexLock lock(&mu_);
  // Cut short by Shutdown() so tests do not wait out long delays.
  mu_.AwaitWithTimeout(absl::Condition(&shutting_down_), delay_);
  ack_requests_.push_back(*request);
  if (!ack_status_.ok()) return ack_status_;
  for (const std::string& id : request->ids()) acked_ids_.push_back(id);
  response->set_acked(request->ids_size());
  return grpc::Status::OK;
}

grpc::Status FakeMessaging::MessageNack(grpc::ServerContext* context,
                                        const v1::MessageNackRequest* request,
                                        v1::MessageNackResponse* response) {
  absl::MutexLock lock(&mu_);
  nack_requests_.push_back(*request);
  if (!failure_rpc_status_.ok()) return failure_rpc_status_;
  for (const v1::Delivery& d : request->deliveries()) {
    if (lost_.count(d.id()) > 0) continue;
    if (request->dead()) {
      response->set_dead(response->dead() + 1);
    } else {
      response->set_retried(response->retried() + 1);
    }
  }
  return grpc::Status::OK;
}

grpc::Status FakeMessaging::MessageExtend(
    grpc::ServerContext* context, const v1::MessageExtendRequest* request,
    v1::MessageExtendResponse* response) {
  absl::MutexLock lock(&mu_);
  extend_requests_.push_back(*request);
  if (!failure_rpc_status_.ok()) return failure_rpc_status_;
  for (const v1::Delivery& d : request->deliveries()) {
    if (lost_.count(d.id()) == 0) {
      response->set_extended(response->extended() + 1);
    }
  }
  return grpc::Status::OK;
}

grpc::Status FakeMessaging::Redrive(grpc::ServerContext* context,
                                    const v1::RedriveRequest* request,
                                    v1::RedriveResponse* response) {
  absl::MutexLock lock(&mu_);
  redrive_requests_.push_back(*request);
  if (!failure_rpc_status_.ok()) return failure_rpc_status_;
  std::vector<v1::DeadMessage> kept;
  for (v1::DeadMessage& m : dead_) {
    const bool named = request->all() ||
                       std::find(request->ids().begin(), request->ids().end(),
                                 m.id()) != request->ids().end();
    if (named) {
      response->set_redriven(response->redriven() + 1);
    } else {
      kept.push_back(std::move(m));
    }
  }
  dead_ = std::move(kept);
  return grpc::Status::OK;
}

grpc::Status FakeMessaging::ListDead(grpc::ServerContext* context,
                                     const v1::ListDeadRequest* request,
                                     v1::ListDeadResponse* response) {
  absl::MutexLock lock(&mu_);
  list_dead_requests_.push_back(*request);
  if (!failure_rpc_status_.ok()) return failure_rpc_status_;
  const int limit = request->limit() == 0 ? 100 : request->limit();
  // Ids are compared as the list orders them: after `after_id`'s entry.
  bool started = request->after_id().empty();
  for (const v1::DeadMessage& m : dead_) {
    if (!started) {
      started = m.id() == request->after_id();
      continue;
    }
    if (response->messages_size() >= limit) break;
    *response->add_messages() = m;
  }
  return grpc::Status::OK;
}

grpc::Status FakeMessaging::ListTables(grpc::ServerContext* context,
                                       const v1::ListTablesRequest* request,
                                       v1::ListTablesResponse* response) {
  absl::MutexLock lock(&mu_);
  // Cut short by Shutdown() so tests do not wait out long delays.
  mu_.AwaitWithTimeout(absl::Condition(&shutting_down_), delay_);
  *response = tables_;
  return grpc::Status::OK;
}

}  // namespace msgq::testing
