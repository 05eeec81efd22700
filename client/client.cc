#include "msgq/client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/internal/messaging_calls.h"
#include "common/grpc_status.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq {

class Client::Stub {
 public:
  explicit Stub(const std::shared_ptr<grpc::ChannelInterface>& channel)
      : stub(v1::Messaging::NewStub(channel)) {}
  const std::unique_ptr<v1::Messaging::Stub> stub;
};

namespace {

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

template <typename Request>
void SetTable(Request& request, const TableRef& table) {
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
}

void AddDeliveries(absl::Span<const Delivery> deliveries,
                   google::protobuf::RepeatedPtrField<v1::Delivery>* out) {
  out->Reserve(static_cast<int>(deliveries.size()));
  for (const Delivery& d : deliveries) {
    v1::Delivery* delivery = out->Add();
    delivery->set_id(d.id);
    delivery->set_epoch(d.epoch);
  }
}

// Unix ns, 0 meaning unknown, as an absl::Time.
std::optional<absl::Time> TimeOrNone(int64_t unix_ns) {
  if (unix_ns == 0) return std::nullopt;
  return absl::FromUnixNanos(unix_ns);
}

DeadMessage FromProto(const v1::DeadMessage& m) {
  return {.id = m.id(),
          .epoch = m.epoch(),
          .last_error = m.last_error(),
          .time_dead = TimeOrNone(m.time_dead()),
          .time_created = TimeOrNone(m.time_created())};
}

Group FromProto(const v1::Group& g) {
  return {.keyspace = g.keyspace(),
          .table = g.table(),
          .name = g.name(),
          .floor_gtid = g.floor_gtid(),
          .filter = g.filter(),
          .created_at = absl::FromUnixNanos(g.created_at_ns()),
          .paused = g.paused()};
}

TableSettings FromProto(const v1::TableSettings& s) {
  return {.ack_wait = absl::Seconds(s.ack_wait()),
          .purge_after = absl::Seconds(s.purge_after()),
          .batch_size = s.batch_size(),
          .cache_size = s.cache_size(),
          .poller_interval = absl::Seconds(s.poller_interval()),
          .min_backoff = absl::Seconds(s.min_backoff()),
          .max_backoff = absl::Seconds(s.max_backoff()),
          .message_cols = {s.message_cols().begin(), s.message_cols().end()},
          .max_attempts = s.max_attempts(),
          .max_age = absl::Seconds(s.max_age()),
          .dead_retention = absl::Seconds(s.dead_retention()),
          .rate_limit = s.rate_limit(),
          .rate_burst = s.rate_burst(),
          .order_by = s.order_by(),
          .fair_by = s.fair_by(),
          .concurrency_by = s.concurrency_by(),
          .concurrency = s.concurrency()};
}

Ownership FromProto(const v1::Ownership& o) {
  return {.state = o.state(),
          .owner = o.owner(),
          .since = TimeOrNone(o.since()),
          .expires = TimeOrNone(o.expires()),
          .error = o.error()};
}

TableStatus FromProto(const v1::TableStatus& t) {
  return {.keyspace = t.keyspace(),
          .name = t.name(),
          .loaded = t.loaded(),
          .error = t.error(),
          .subscribers = t.subscribers(),
          .discovery = t.discovery(),
          .settings = FromProto(t.settings()),
          .cached = t.cached(),
          .in_flight = t.in_flight(),
          .dead = t.dead(),
          .sent = t.sent(),
          .redelivered = t.redelivered(),
          .postponed = t.postponed(),
          .acked = t.acked(),
          .nacked = t.nacked(),
          .died = t.died(),
          .purged = t.purged(),
          .polls = t.polls(),
          .ownership = FromProto(t.ownership()),
          .paused = t.paused(),
          .keys_at_limit = t.keys_at_limit()};
}

// `protos` converted one by one, or their error.
template <typename Proto>
auto AllFromProto(absl::StatusOr<std::vector<Proto>> protos)
    -> absl::StatusOr<std::vector<decltype(FromProto(std::declval<Proto>()))>> {
  if (!protos.ok()) return protos.status();
  std::vector<decltype(FromProto(std::declval<Proto>()))> out;
  out.reserve(protos->size());
  for (const Proto& p : *protos) out.push_back(FromProto(p));
  return out;
}

absl::StatusOr<int64_t> SendRedrive(v1::Messaging::Stub& stub,
                                    absl::Duration timeout,
                                    const v1::RedriveRequest& request) {
  v1::RedriveResponse response;
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  grpc::Status status = stub.Redrive(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.redriven();
}

}  // namespace

grpc::ChannelArguments MsgqChannelArguments() {
  grpc::ChannelArguments args;
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC uses it as the connect
  // timeout (default 20s), and a short one fails handshakes under load.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 6 * 60 * 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return args;
}

std::shared_ptr<grpc::Channel> NewChannel(absl::string_view target) {
  return grpc::CreateCustomChannel(std::string(target),
                                   grpc::InsecureChannelCredentials(),
                                   MsgqChannelArguments());
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    absl::string_view target, const ClientOptions& options) {
  if (target.empty()) {
    return absl::InvalidArgumentError("empty server address");
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout must be positive");
  }
  return std::make_unique<Client>(NewChannel(target), options);
}

Client::Client(std::shared_ptr<grpc::ChannelInterface> channel,
               const ClientOptions& options)
    : channel_(std::move(channel)),
      options_(options),
      stub_(std::make_unique<Stub>(channel_)) {}

Client::~Client() = default;

absl::StatusOr<int64_t> Client::Ack(const TableRef& table,
                                    absl::Span<const std::string> ids,
                                    absl::string_view group) {
  if (ids.empty()) return 0;
  v1::MessageAckRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  request.set_group(std::string(group));
  request.mutable_ids()->Reserve(static_cast<int>(ids.size()));
  for (const std::string& id : ids) request.add_ids(id);
  v1::MessageAckResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->stub->MessageAck(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.acked();
}

absl::StatusOr<NackResult> Client::Nack(const TableRef& table,
                                        absl::Span<const Delivery> deliveries,
                                        const NackParams& params) {
  if (params.delay.has_value() && *params.delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "negative nack delay ", absl::FormatDuration(*params.delay)));
  }
  if (deliveries.empty()) return NackResult{};
  v1::MessageNackRequest request;
  SetTable(request, table);
  AddDeliveries(deliveries, request.mutable_deliveries());
  if (params.delay.has_value()) {
    request.mutable_delay()->set_value(absl::ToDoubleSeconds(*params.delay));
  }
  request.set_reason(params.reason);
  request.set_dead(params.dead);
  request.set_group(params.group);
  v1::MessageNackResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->stub->MessageNack(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return NackResult{response.retried(), response.dead()};
}

absl::StatusOr<int64_t> Client::Extend(const TableRef& table,
                                       absl::Span<const Delivery> deliveries,
                                       absl::Duration duration) {
  if (duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("extend duration must be positive, got ",
                     absl::FormatDuration(duration)));
  }
  if (deliveries.empty()) return 0;
  v1::MessageExtendRequest request;
  SetTable(request, table);
  AddDeliveries(deliveries, request.mutable_deliveries());
  request.set_duration(absl::ToDoubleSeconds(duration));
  v1::MessageExtendResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status =
      stub_->stub->MessageExtend(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.extended();
}

absl::StatusOr<int64_t> Client::Redrive(const TableRef& table,
                                        absl::Span<const std::string> ids) {
  if (ids.empty()) return 0;
  v1::RedriveRequest request;
  SetTable(request, table);
  for (const std::string& id : ids) request.add_ids(id);
  return SendRedrive(*stub_->stub, options_.timeout, request);
}

absl::StatusOr<int64_t> Client::RedriveAll(const TableRef& table) {
  v1::RedriveRequest request;
  SetTable(request, table);
  request.set_all(true);
  return SendRedrive(*stub_->stub, options_.timeout, request);
}

absl::StatusOr<std::vector<DeadMessage>> Client::ListDead(
    const TableRef& table, int32_t limit, absl::string_view after_id) {
  return AllFromProto(internal::ListDeadCall(*this, table, limit, after_id));
}

absl::Status Client::SetPaused(const TableRef& table, bool paused) {
  v1::SetPausedRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  request.set_paused(paused);
  v1::SetPausedResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->stub->SetPaused(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return absl::OkStatus();
}

absl::StatusOr<Group> Client::CreateGroup(const TableRef& table,
                                          const std::string& group,
                                          const std::string& from,
                                          const std::string& filter) {
  absl::StatusOr<v1::Group> created =
      internal::CreateGroupCall(*this, table, group, from, filter);
  if (!created.ok()) return created.status();
  return FromProto(*created);
}

absl::StatusOr<std::vector<Group>> Client::ListGroups(const TableRef& table) {
  return AllFromProto(internal::ListGroupsCall(*this, table));
}

absl::Status Client::DeleteGroup(const TableRef& table,
                                 const std::string& group) {
  v1::DeleteGroupRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  request.set_group(group);
  v1::DeleteGroupResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->stub->DeleteGroup(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TableStatus>> Client::ListTables() {
  return AllFromProto(internal::ListTablesCall(*this));
}

// These calls make a stub of their own: they are rare (a command of the
// CLI, a stream's start), and Client's stub is its own private member.
namespace internal {

absl::StatusOr<std::vector<v1::DeadMessage>> ListDeadCall(
    const Client& client, const TableRef& table, int32_t limit,
    absl::string_view after_id) {
  if (limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative dead message limit ", limit));
  }
  v1::ListDeadRequest request;
  SetTable(request, table);
  request.set_limit(limit);
  request.set_after_id(std::string(after_id));
  v1::ListDeadResponse response;
  grpc::ClientContext context;
  SetDeadline(context, client.options().timeout);
  grpc::Status status = v1::Messaging::NewStub(client.channel())
                            ->ListDead(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::DeadMessage>(
      std::make_move_iterator(response.mutable_messages()->begin()),
      std::make_move_iterator(response.mutable_messages()->end()));
}

absl::StatusOr<v1::Group> CreateGroupCall(const Client& client,
                                          const TableRef& table,
                                          const std::string& group,
                                          const std::string& from,
                                          const std::string& filter) {
  v1::CreateGroupRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  request.set_group(group);
  request.set_start(from);
  request.set_filter(filter);
  v1::CreateGroupResponse response;
  grpc::ClientContext context;
  SetDeadline(context, client.options().timeout);
  grpc::Status status = v1::Messaging::NewStub(client.channel())
                            ->CreateGroup(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.group();
}

absl::StatusOr<std::vector<v1::Group>> ListGroupsCall(const Client& client,
                                                      const TableRef& table) {
  v1::ListGroupsRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  v1::ListGroupsResponse response;
  grpc::ClientContext context;
  SetDeadline(context, client.options().timeout);
  grpc::Status status = v1::Messaging::NewStub(client.channel())
                            ->ListGroups(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::Group>(
      std::make_move_iterator(response.mutable_groups()->begin()),
      std::make_move_iterator(response.mutable_groups()->end()));
}

absl::StatusOr<std::vector<v1::TableStatus>> ListTablesCall(
    const Client& client) {
  v1::ListTablesResponse response;
  grpc::ClientContext context;
  SetDeadline(context, client.options().timeout);
  grpc::Status status =
      v1::Messaging::NewStub(client.channel())
          ->ListTables(&context, v1::ListTablesRequest(), &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::TableStatus>(
      std::make_move_iterator(response.mutable_tables()->begin()),
      std::make_move_iterator(response.mutable_tables()->end()));
}

}  // namespace internal
}  // namespace msgq
