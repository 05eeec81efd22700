#include "client/client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <utility>

#include "absl/status/status.h"
#include "common/grpc_status.h"

namespace msgq {
namespace {

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

}  // namespace

std::shared_ptr<grpc::Channel> NewChannel(absl::string_view target) {
  grpc::ChannelArguments args;
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC uses it as the connect
  // timeout (default 20s), and a short one fails handshakes under load.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 6 * 60 * 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return grpc::CreateCustomChannel(std::string(target),
                                   grpc::InsecureChannelCredentials(), args);
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
