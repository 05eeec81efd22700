#include "client/client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace msgq {
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
      stub_(v1::Messaging::NewStub(channel_)) {}

absl::StatusOr<int64_t> Client::Ack(const TableRef& table,
                                    absl::Span<const std::string> ids) {
  if (ids.empty()) return 0;
  v1::MessageAckRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  request.mutable_ids()->Reserve(static_cast<int>(ids.size()));
  for (const std::string& id : ids) request.add_ids(id);
  v1::MessageAckResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->MessageAck(&context, request, &response);
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
  v1::MessageNackResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->MessageNack(&context, request, &response);
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
  grpc::Status status = stub_->MessageExtend(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.extended();
}

absl::StatusOr<int64_t> Client::Redrive(const TableRef& table,
                                        absl::Span<const std::string> ids) {
  if (ids.empty()) return 0;
  v1::RedriveRequest request;
  SetTable(request, table);
  for (const std::string& id : ids) request.add_ids(id);
  return SendRedrive(request);
}

absl::StatusOr<int64_t> Client::RedriveAll(const TableRef& table) {
  v1::RedriveRequest request;
  SetTable(request, table);
  request.set_all(true);
  return SendRedrive(request);
}

absl::StatusOr<int64_t> Client::SendRedrive(const v1::RedriveRequest& request) {
  v1::RedriveResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->Redrive(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.redriven();
}

absl::StatusOr<std::vector<v1::DeadMessage>> Client::ListDead(
    const TableRef& table, int32_t limit, absl::string_view after_id) {
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
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->ListDead(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::DeadMessage>(
      std::make_move_iterator(response.mutable_messages()->begin()),
      std::make_move_iterator(response.mutable_messages()->end()));
}

absl::Status Client::SetPaused(const TableRef& table, bool paused) {
  v1::SetPausedRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  request.set_paused(paused);
  v1::SetPausedResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->SetPaused(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return absl::OkStatus();
}

absl::StatusOr<v1::Group> Client::CreateGroup(const TableRef& table,
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
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->CreateGroup(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.group();
}

absl::StatusOr<std::vector<v1::Group>> Client::ListGroups(
    const TableRef& table) {
  v1::ListGroupsRequest request;
  request.set_keyspace(table.keyspace);
  request.set_name(table.name);
  v1::ListGroupsResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status = stub_->ListGroups(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::Group>(
      std::make_move_iterator(response.mutable_groups()->begin()),
      std::make_move_iterator(response.mutable_groups()->end()));
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
  grpc::Status status = stub_->DeleteGroup(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::TableStatus>> Client::ListTables() {
  v1::ListTablesResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.timeout);
  grpc::Status status =
      stub_->ListTables(&context, v1::ListTablesRequest(), &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::TableStatus>(
      std::make_move_iterator(response.mutable_tables()->begin()),
      std::make_move_iterator(response.mutable_tables()->end()));
}

}  // namespace msgq
