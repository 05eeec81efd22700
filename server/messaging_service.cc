#include "server/messaging_service.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "server/stream_reactor.h"

namespace msgq {

grpc::ServerWriteReactor<v1::MessageStreamResponse>*
MessagingService::MessageStream(grpc::CallbackServerContext* /*context*/,
                                const v1::MessageStreamRequest* request) {
  return new StreamReactor(engine_, *request);
}

grpc::ServerUnaryReactor* MessagingService::MessageAck(
    grpc::CallbackServerContext* context, const v1::MessageAckRequest* request,
    v1::MessageAckResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::shared_ptr<MessageManager>> manager =
      engine_->Find(request->keyspace(), request->name());
  if (!manager.ok()) {
    reactor->Finish(ToGrpcStatus(manager.status()));
    return reactor;
  }
  std::vector<std::string> ids(request->ids().begin(), request->ids().end());
  (*manager)->Ack(std::move(ids),
                  [reactor, response](absl::StatusOr<int64_t> acked) {
                    if (acked.ok()) {
                      response->set_acked(*acked);
                      reactor->Finish(grpc::Status::OK);
                    } else {
                      reactor->Finish(ToGrpcStatus(acked.status()));
                    }
                  });
  return reactor;
}

grpc::ServerUnaryReactor* MessagingService::ListTables(
    grpc::CallbackServerContext* context,
    const v1::ListTablesRequest* /*request*/,
    v1::ListTablesResponse* response) {
  for (const Engine::TableInfo& info : engine_->ListTables()) {
    v1::TableStatus* t = response->add_tables();
    t->set_keyspace(info.keyspace);
    t->set_name(info.name);
    t->set_loaded(info.loaded);
    t->set_error(info.error);
    t->set_subscribers(info.stats.subscribers);
    t->set_discovery(info.discovery);
    t->set_cached(info.stats.queued);
    t->set_in_flight(info.stats.in_flight);
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
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace msgq
