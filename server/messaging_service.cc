#include "server/messaging_service.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "server/auth/grpc_auth.h"
#include "server/auth/table_access.h"
#include "server/stream_reactor.h"

namespace msgq {
namespace {

// Dead messages per ListDead page when the request says 0.
constexpr int kDefaultDeadPage = 100;

template <typename Request>
std::vector<MessageManager::Delivery> Deliveries(const Request& request) {
  std::vector<MessageManager::Delivery> out;
  out.reserve(static_cast<size_t>(request.deliveries_size()));
  for (const v1::Delivery& d : request.deliveries()) {
    out.push_back(MessageManager::Delivery{d.id(), d.epoch()});
  }
  return out;
}

// Finishes `reactor` with the status of `value`, or OK after `fill`.
template <typename T, typename Fill>
auto Finisher(grpc::ServerUnaryReactor* reactor, Fill fill) {
  return [reactor, fill](absl::StatusOr<T> value) {
    if (!value.ok()) {
      reactor->Finish(ToGrpcStatus(value.status()));
      return;
    }
    fill(*value);
    reactor->Finish(grpc::Status::OK);
  };
}

// Seconds from a request; INVALID_ARGUMENT for NaN or infinity.
absl::StatusOr<absl::Duration> RequestSeconds(const char* what, double s) {
  if (!std::isfinite(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a finite number of seconds"));
  }
  return absl::Seconds(s);
}

// The manager of the request's table after authenticating the caller and
// authorizing `action` on the table; on an error `reactor` is finished with
// it and null is returned.
template <typename Request>
std::shared_ptr<MessageManager> ManagerOrFinish(
    const Engine& engine, const auth::Authorizer& authorizer,
    const auth::PeerDirectory* peers,
    const grpc::CallbackServerContext& context, const Request& request,
    auth::Action action, grpc::ServerUnaryReactor* reactor) {
  absl::StatusOr<std::string> principal =
      auth::AuthenticateCall(authorizer, peers, context);
  if (!principal.ok()) {
    reactor->Finish(ToGrpcStatus(principal.status()));
    return nullptr;
  }
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      auth::FindForCaller(engine, &authorizer, *principal, action,
                          request.keyspace(), request.name());
  if (!manager.ok()) {
    reactor->Finish(ToGrpcStatus(manager.status()));
    return nullptr;
  }
  return *std::move(manager);
}

}  // namespace

grpc::ServerWriteReactor<v1::MessageStreamResponse>*
MessagingService::MessageStream(grpc::CallbackServerContext* context,
                                const v1::MessageStreamRequest* request) {
  return new StreamReactor(engine_, authorizer_, peers_, *context, *request);
}

grpc::ServerUnaryReactor* MessagingService::MessageAck(
    grpc::CallbackServerContext* context, const v1::MessageAckRequest* request,
    v1::MessageAckResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<MessageManager> manager =
      ManagerOrFinish(*engine_, *authorizer_, peers_, *context, *request,
                      auth::Action::kAck, reactor);
  if (manager == nullptr) return reactor;
  std::vector<std::string> ids(request->ids().begin(), request->ids().end());
  auto finish = [reactor, response](absl::StatusOr<int64_t> acked) {
    if (acked.ok()) {
      response->set_acked(*acked);
      reactor->Finish(grpc::Status::OK);
    } else {
      reactor->Finish(ToGrpcStatus(acked.status()));
    }
  };
  if (!request->group().empty()) {
    engine_->AckGroup(request->keyspace(), request->name(), request->group(),
                      std::move(ids), std::move(finish));
    return reactor;
  }
  manager->Ack(std::move(ids), std::move(finish));
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::MessageNack(
    grpc::CallbackServerContext* context, const v1::MessageNackRequest* request,
    v1::MessageNackResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<MessageManager> manager =
      ManagerOrFinish(*engine_, *authorizer_, peers_, *context, *request,
                      auth::Action::kNack, reactor);
  if (manager == nullptr) return reactor;
  MessageManager::NackRequest nack;
  nack.deliveries = Deliveries(*request);
  if (request->has_delay()) {
    absl::StatusOr<absl::Duration> delay =
        RequestSeconds("delay", request->delay().value());
    if (!delay.ok()) {
      reactor->Finish(ToGrpcStatus(delay.status()));
      return reactor;
    }
    nack.delay = *delay;
  }
  nack.reason = request->reason();
  nack.dead = request->dead();
  auto fill = [response](NackCount n) {
    response->set_retried(n.retried);
    response->set_dead(n.dead);
  };
  if (!request->group().empty()) {
    engine_->NackGroup(request->keyspace(), request->name(), request->group(),
                       std::move(nack.deliveries), nack.delay,
                       std::move(nack.reason), nack.dead,
                       Finisher<NackCount>(reactor, fill));
    return reactor;
  }
  manager->Nack(std::move(nack),
                Finisher<NackCount>(reactor, [response](NackCount n) {
                  response->set_retried(n.retried);
                  response->set_dead(n.dead);
                }));
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::MessageExtend(
    grpc::CallbackServerContext* context,
    const v1::MessageExtendRequest* request,
    v1::MessageExtendResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<MessageManager> manager =
      ManagerOrFinish(*engine_, *authorizer_, peers_, *context, *request,
                      auth::Action::kNack, reactor);
  if (manager == nullptr) return reactor;
  absl::StatusOr<absl::Duration> duration =
      RequestSeconds("duration", request->duration());
  if (!duration.ok()) {
    reactor->Finish(ToGrpcStatus(duration.status()));
    return reactor;
  }
  manager->Extend(Deliveries(*request), *duration,
                  Finisher<int64_t>(reactor, [response](int64_t n) {
                    response->set_extended(n);
                  }));
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::Redrive(
    grpc::CallbackServerContext* context, const v1::RedriveRequest* request,
    v1::RedriveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<MessageManager> manager =
      ManagerOrFinish(*engine_, *authorizer_, peers_, *context, *request,
                      auth::Action::kAdmin, reactor);
  if (manager == nullptr) return reactor;
  std::vector<std::string> ids(request->ids().begin(), request->ids().end());
  auto finish = Finisher<int64_t>(
      reactor, [response](int64_t n) { response->set_redriven(n); });
  if (!request->group().empty()) {
    engine_->RedriveGroup(request->keyspace(), request->name(),
                          request->group(), std::move(ids), request->all(),
                          std::move(finish));
    return reactor;
  }
  manager->Redrive(std::move(ids), request->all(), std::move(finish));
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::ListDead(
    grpc::CallbackServerContext* context, const v1::ListDeadRequest* request,
    v1::ListDeadResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<MessageManager> manager =
      ManagerOrFinish(*engine_, *authorizer_, peers_, *context, *request,
                      auth::Action::kAdmin, reactor);
  if (manager == nullptr) return reactor;
  const int limit = request->limit() == 0 ? kDefaultDeadPage : request->limit();
  auto finish = Finisher<std::vector<DeadRow>>(
      reactor, [response](const std::vector<DeadRow>& rows) {
        for (const DeadRow& row : rows) {
          v1::DeadMessage* m = response->add_messages();
          m->set_id(row.id);
          m->set_epoch(row.epoch);
          m->set_last_error(row.last_error);
          m->set_time_dead(row.time_dead);
          m->set_time_created(row.time_created);
        }
      });
  if (!request->group().empty()) {
    engine_->ListDeadGroup(request->keyspace(), request->name(),
                           request->group(), request->after_id(), limit,
                           std::move(finish));
    return reactor;
  }
  manager->ListDead(request->after_id(), limit, std::move(finish));
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::SetPaused(
    grpc::CallbackServerContext* context, const v1::SetPausedRequest* request,
    v1::SetPausedResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Resolves an empty keyspace to the table's before the check.
  std::shared_ptr<MessageManager> manager =
      ManagerOrFinish(*engine_, *authorizer_, peers_, *context, *request,
                      auth::Action::kAdmin, reactor);
  if (manager == nullptr) return reactor;
  engine_->SetPaused(manager->table().keyspace, request->name(),
                     request->paused(), [reactor](absl::Status status) {
                       reactor->Finish(ToGrpcStatus(status));
                     });
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::ListTables(
    grpc::CallbackServerContext* context,
    const v1::ListTablesRequest* /*request*/,
    v1::ListTablesResponse* response) {
  absl::StatusOr<std::string> principal =
      auth::AuthenticateCall(*authorizer_, peers_, *context);
  if (!principal.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpcStatus(principal.status()));
    return reactor;
  }
  const std::vector<Engine::TableInfo> tables = engine_->ListTables();
  if (tables.empty()) {
    // Nothing known yet: say why rather than answer an empty list.
    if (absl::Status health = engine_->Health(); !health.ok()) {
      grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
      reactor->Finish(ToGrpcStatus(health));
      return reactor;
    }
  }
  for (const Engine::TableInfo& info : tables) {
    if (!authorizer_->MayList(*principal, info.keyspace, info.name)) continue;
    v1::TableStatus* t = response->add_tables();
    t->set_keyspace(info.keyspace);
    t->set_name(info.name);
    t->set_loaded(info.loaded);
    t->set_error(info.error);
    t->set_subscribers(info.stats.subscribers);
    t->set_discovery(info.discovery);
    t->set_cached(info.stats.queued);
    t->set_in_flight(info.stats.in_flight);
    t->set_dead(info.loaded ? info.stats.dead : -1);
    t->set_sent(info.stats.sent);
    t->set_redelivered(info.stats.redelivered);
    t->set_postponed(info.stats.postponed);
    t->set_acked(info.stats.acked);
    t->set_nacked(info.stats.nacked);
    t->set_died(info.stats.died);
    t->set_purged(info.stats.purged);
    t->set_polls(info.stats.polls);
    t->set_paused(info.stats.paused);
    t->set_keys_at_limit(info.stats.keys_at_limit);
    v1::Ownership* own = t->mutable_ownership();
    own->set_state(info.ownership.state);
    own->set_owner(info.ownership.owner);
    own->set_since(info.ownership.since);
    own->set_expires(info.ownership.expires);
    own->set_error(info.ownership.error);
    if (info.loaded) {
      const TableSettings& s = info.settings;
      v1::TableSettings* out = t->mutable_settings();
      out->set_ack_wait(absl::ToDoubleSeconds(s.ack_wait));
      out->set_purge_after(absl::ToDoubleSeconds(s.purge_after));
      out->set_batch_size(s.batch_size);
      out->set_cache_size(s.cache_size);
      out->set_poller_interval(absl::ToDoubleSeconds(s.poller_interval));
      out->set_min_backoff(absl::ToDoubleSeconds(s.min_backoff));
      out->set_max_backoff(s.max_backoff == absl::InfiniteDuration()
                               ? 0
                               : absl::ToDoubleSeconds(s.max_backoff));
      for (const std::string& c : s.message_cols) out->add_message_cols(c);
      out->set_max_attempts(s.max_attempts);
      out->set_max_age(absl::ToDoubleSeconds(s.max_age));
      out->set_dead_retention(absl::ToDoubleSeconds(s.dead_retention));
      out->set_rate_limit(s.rate_limit);
      out->set_rate_burst(s.rate_burst);
      out->set_order_by(s.order_by);
      out->set_fair_by(s.fair_by);
      out->set_concurrency_by(s.concurrency_by);
      out->set_concurrency(s.concurrency);
    }
  }
  const BinlogWatcher::Status binlog = engine_->binlog_status();
  v1::BinlogStatus* b = response->mutable_binlog();
  b->set_streaming(binlog.streaming);
  b->set_server_id(binlog.server_id);
  b->set_last_error(binlog.last_error);
  b->set_position_resets(binlog.position_resets);
  b->set_evictions(binlog.evictions);
  b->set_position(binlog.position);
  response->set_instance(engine_->instance_id());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace msgq
