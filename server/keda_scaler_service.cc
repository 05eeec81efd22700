#include "server/keda_scaler_service.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/tsan_annotations.h"
#include "server/auth/grpc_auth.h"
#include "server/auth/table_access.h"
#include "server/keda_scaler.h"

namespace msgq {
namespace {

// A unary reactor finished with `status`.
grpc::ServerUnaryReactor* Finished(grpc::CallbackServerContext* context,
                                   const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

struct KedaScalerService::Resolved {
  auth::Authorizer::Credential credential;
  KedaTrigger trigger;
  Key key;  // the table found (keyspace resolved)
};

// One StreamIsActive's state, shared by its reactor and the service's
// stream list: the activity to send, and the write/finish token (one write
// in flight; Finish once, only with no write in flight, so the reactor
// outlives every StartWrite).
class KedaScalerService::ActivityOutbox {
 public:
  ActivityOutbox(
      grpc::ServerWriteReactor<externalscaler::IsActiveResponse>* reactor,
      const Engine* engine, KedaTrigger trigger, Key key)
      : reactor_(reactor),
        engine_(engine),
        trigger_(std::move(trigger)),
        key_(std::move(key)) {}

  // Reads the table's counts now and sends its activity if it changed
  // since the last write; ends the stream when the table is gone. Reads
  // are serialized, so the last one is what is sent.
  void Refresh() {
    absl::ReleasableMutexLock lock(&mu_);
    if (finish_requested_) {
      lock.Release();
      return;
    }
    absl::StatusOr<MessageCounts::Counts> counts =
        engine_->TableCounts(key_.first, key_.second);
    if (counts.ok()) {
      wanted_ = KedaActive(trigger_, *counts);
    } else if (counts.status().code() == absl::StatusCode::kNotFound ||
               counts.status().code() ==
                   absl::StatusCode::kFailedPrecondition) {
      BeginFinishLocked(ToGrpcStatus(counts.status()));
    }
    // UNAVAILABLE (counts not loaded yet, a reload): wait for the next.
    Advance(lock);
  }

  void OnWriteDone(bool ok) {
    absl::ReleasableMutexLock lock(&mu_);
    writing_ = false;
    if (!ok && !finish_requested_) {
      BeginFinishLocked(
          grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    }
    Advance(lock);
  }

  void RequestFinish(grpc::Status status) {
    absl::ReleasableMutexLock lock(&mu_);
    if (!finish_requested_) BeginFinishLocked(std::move(status));
    Advance(lock);
  }

 private:
  void BeginFinishLocked(grpc::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.AssertHeld();
    finish_requested_ = true;
    finish_status_ = std::move(status);
  }

  // Starts the next write or the finish, outside the lock.
  void Advance(absl::ReleasableMutexLock& lock)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) {
      lock.Release();
      return;
    }
    if (finish_requested_) {
      finished_ = true;
      grpc::Status status = finish_status_;
      lock.Release();
      reactor_->Finish(status);
      return;
    }
    if (!wanted_.has_value() || wanted_ == written_) {
      lock.Release();
      return;
    }
    written_ = wanted_;
    response_.set_result(*wanted_);
    writing_ = true;
    lock.Release();
    // response_ is not touched again until OnWriteDone, and the reactor
    // cannot finish while writing_ is set.
    reactor_->StartWrite(&response_);
  }

  grpc::ServerWriteReactor<externalscaler::IsActiveResponse>* const reactor_;
  const Engine* const engine_;
  const KedaTrigger trigger_;
  const Key key_;

  absl::Mutex mu_;
  std::optional<bool> wanted_ ABSL_GUARDED_BY(mu_);
  std::optional<bool> written_ ABSL_GUARDED_BY(mu_);
  externalscaler::IsActiveResponse response_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

// The StreamIsActive reactor; deletes itself in OnDone, after leaving the
// service's stream list.
class KedaScalerService::ActivityStream final
    : public grpc::ServerWriteReactor<externalscaler::IsActiveResponse> {
 public:
  ActivityStream(KedaScalerService* service,
                 grpc::CallbackServerContext& context,
                 const externalscaler::ScaledObjectRef& request)
      : service_(service) {
    Begin(context, request);
    // gRPC runs OnDone, OnWriteDone and OnCancel after the handler that
    // made this reactor returned (server/stream_reactor.cc says why TSan
    // is told).
    MSGQ_TSAN_RELEASE(this);
  }

  void OnWriteDone(bool ok) override {
    MSGQ_TSAN_ACQUIRE(this);
    outbox_->OnWriteDone(ok);
    MSGQ_TSAN_RELEASE(this);
  }

  void OnCancel() override {
    MSGQ_TSAN_ACQUIRE(this);
    if (outbox_ != nullptr) {
      outbox_->RequestFinish(
          grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled"));
    }
    MSGQ_TSAN_RELEASE(this);
  }

  void OnDone() override {
    MSGQ_TSAN_ACQUIRE(this);
    // The one place this reactor is deleted: no reaction follows, and the
    // listener no longer reaches its outbox (it never touches a finished
    // outbox's reactor).
    if (reload_watcher_ != 0) {
      service_->authorizer_->RemoveReloadWatcher(reload_watcher_);
    }
    if (registered_) service_->RemoveStream(key_, connection_, outbox_.get());
    delete this;
  }

 private:
  void Begin(grpc::CallbackServerContext& context,
             const externalscaler::ScaledObjectRef& request) {
    absl::StatusOr<Resolved> resolved = service_->Resolve(context, request);
    if (!resolved.ok()) {
      Finish(ToGrpcStatus(resolved.status()));
      return;
    }
    key_ = resolved->key;
    connection_ = context.peer();
    outbox_ = std::make_shared<ActivityOutbox>(
        this, service_->engine_, std::move(resolved->trigger), key_);
    if (absl::Status added = service_->AddStream(key_, connection_, outbox_);
        !added.ok()) {
      outbox_.reset();
      Finish(ToGrpcStatus(added));
      return;
    }
    registered_ = true;
    WatchRevocation(std::move(resolved->credential));
    // After joining the list: a change from now on refreshes again.
    outbox_->Refresh();
  }

  // Ends the stream when a reload of the tokens or policy file takes away
  // the caller's credential or its sight of the table (as
  // server/auth/stream_revocation.h does for MessageStream, with "see" for
  // the action).
  void WatchRevocation(auth::Authorizer::Credential credential) {
    auth::Authorizer* const authorizer = service_->authorizer_;
    if (authorizer == nullptr || !authorizer->required()) return;
    auto check = [authorizer, credential = std::move(credential), key = key_,
                  outbox = std::weak_ptr<ActivityOutbox>(outbox_)] {
      absl::Status s = authorizer->StillAuthenticates(credential);
      if (s.ok() &&
          !authorizer->MayList(credential.principal, key.first, key.second)) {
        s = auth::SeeDenied(credential.principal, key.first, key.second);
      }
      if (s.ok()) return;
      // A finished outbox ignores this: its reactor may be gone.
      if (std::shared_ptr<ActivityOutbox> open = outbox.lock()) {
        open->RequestFinish(ToGrpcStatus(s));
      }
    };
    reload_watcher_ = authorizer->AddReloadWatcher(check);
    // A reload between Resolve's check and the watch.
    check();
  }

  KedaScalerService* const service_;
  Key key_;
  std::string connection_;
  std::shared_ptr<ActivityOutbox> outbox_;
  bool registered_ = false;
  uint64_t reload_watcher_ = 0;  // 0: none
};

KedaScalerService::KedaScalerService(Engine* engine,
                                     auth::Authorizer* authorizer,
                                     const auth::PeerDirectory* peers,
                                     Options options)
    : engine_(engine),
      authorizer_(authorizer),
      peers_(peers),
      options_(options) {
  listener_ = engine_->AddCountsListener(
      [this](const std::string& keyspace, const std::string& table) {
        OnCountsChanged(keyspace, table);
      });
}

KedaScalerService::~KedaScalerService() {
  engine_->RemoveCountsListener(listener_);
}

int KedaScalerService::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

absl::StatusOr<KedaScalerService::Resolved> KedaScalerService::Resolve(
    const grpc::CallbackServerContext& context,
    const externalscaler::ScaledObjectRef& ref) const {
  auth::Authorizer::Credential credential;
  if (authorizer_ != nullptr) {
    absl::StatusOr<auth::Authorizer::Credential> caller =
        auth::AuthenticateCallCredential(*authorizer_, peers_, context);
    if (!caller.ok()) return caller.status();
    credential = *std::move(caller);
  }
  const std::map<std::string, std::string> metadata(
      ref.scalermetadata().begin(), ref.scalermetadata().end());
  absl::StatusOr<KedaTrigger> trigger = ParseKedaTrigger(metadata);
  if (!trigger.ok()) return trigger.status();
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      auth::FindVisibleToCaller(*engine_, authorizer_, credential.principal,
                                trigger->keyspace, trigger->table);
  if (!manager.ok()) return manager.status();
  const MessageTable& table = (*manager)->table();
  return Resolved{std::move(credential), *std::move(trigger),
                  Key{table.keyspace, table.name}};
}

absl::Status KedaScalerService::AddStream(
    const Key& key, const std::string& connection,
    std::shared_ptr<ActivityOutbox> outbox) {
  absl::MutexLock lock(&mu_);
  if (open_ >= options_.max_streams) {
    return absl::ResourceExhaustedError(
        absl::StrCat("msgqd already has ", options_.max_streams,
                     " StreamIsActive calls open (its limit)"));
  }
  int& on_connection = per_connection_[connection];
  if (on_connection >= options_.max_streams_per_connection) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this connection already has ", options_.max_streams_per_connection,
        " StreamIsActive calls open (the limit per connection)"));
  }
  ++on_connection;
  ++open_;
  streams_.emplace(key, std::move(outbox));
  return absl::OkStatus();
}

void KedaScalerService::RemoveStream(const Key& key,
                                     const std::string& connection,
                                     const ActivityOutbox* outbox) {
  absl::MutexLock lock(&mu_);
  auto [first, last] = streams_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    if (it->second.get() == outbox) {
      streams_.erase(it);
      break;
    }
  }
  if (auto it = per_connection_.find(connection);
      it != per_connection_.end() && --it->second == 0) {
    per_connection_.erase(it);
  }
  --open_;
}

void KedaScalerService::OnCountsChanged(const std::string& keyspace,
                                        const std::string& table) {
  std::vector<std::shared_ptr<ActivityOutbox>> outboxes;
  {
    absl::MutexLock lock(&mu_);
    auto [first, last] = streams_.equal_range(Key{keyspace, table});
    for (auto it = first; it != last; ++it) outboxes.push_back(it->second);
  }
  for (const std::shared_ptr<ActivityOutbox>& outbox : outboxes) {
    outbox->Refresh();
  }
}

grpc::ServerUnaryReactor* KedaScalerService::IsActive(
    grpc::CallbackServerContext* context,
    const externalscaler::ScaledObjectRef* request,
    externalscaler::IsActiveResponse* response) {
  absl::StatusOr<Resolved> resolved = Resolve(*context, *request);
  if (!resolved.ok()) return Finished(context, resolved.status());
  absl::StatusOr<MessageCounts::Counts> counts =
      engine_->TableCounts(resolved->key.first, resolved->key.second);
  if (!counts.ok()) return Finished(context, counts.status());
  response->set_result(KedaActive(resolved->trigger, *counts));
  return Finished(context, absl::OkStatus());
}

grpc::ServerWriteReactor<externalscaler::IsActiveResponse>*
KedaScalerService::StreamIsActive(
    grpc::CallbackServerContext* context,
    const externalscaler::ScaledObjectRef* request) {
  return new ActivityStream(this, *context, *request);
}

grpc::ServerUnaryReactor* KedaScalerService::GetMetricSpec(
    grpc::CallbackServerContext* context,
    const externalscaler::ScaledObjectRef* request,
    externalscaler::GetMetricSpecResponse* response) {
  absl::StatusOr<Resolved> resolved = Resolve(*context, *request);
  if (!resolved.ok()) return Finished(context, resolved.status());
  externalscaler::MetricSpec* spec = response->add_metricspecs();
  spec->set_metricname(
      KedaMetricName(resolved->key.first, resolved->key.second));
  spec->set_targetsize(resolved->trigger.target_messages_per_replica);
  spec->set_targetsizefloat(
      static_cast<double>(resolved->trigger.target_messages_per_replica));
  return Finished(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KedaScalerService::GetMetrics(
    grpc::CallbackServerContext* context,
    const externalscaler::GetMetricsRequest* request,
    externalscaler::GetMetricsResponse* response) {
  absl::StatusOr<Resolved> resolved =
      Resolve(*context, request->scaledobjectref());
  if (!resolved.ok()) return Finished(context, resolved.status());
  absl::StatusOr<MessageCounts::Counts> counts =
      engine_->TableCounts(resolved->key.first, resolved->key.second);
  if (!counts.ok()) return Finished(context, counts.status());
  const int64_t value = KedaMetricValue(resolved->trigger, *counts);
  externalscaler::MetricValue* out = response->add_metricvalues();
  out->set_metricname(
      request->metricname().empty()
          ? KedaMetricName(resolved->key.first, resolved->key.second)
          : request->metricname());
  out->set_metricvalue(value);
  out->set_metricvaluefloat(static_cast<double>(value));
  return Finished(context, absl::OkStatus());
}

}  // namespace msgq
