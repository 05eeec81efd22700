// The unary calls of msgq.v1.Messaging whose answers are generated
// messages, returned as they are: for Client, which converts them into the
// plain structs of its public API (msgq/client.h), and for the msgq CLI and
// the Subscriber's ack-wait lookup, which read or print the messages
// themselves (the CLI's --json is their proto3 JSON form).
//
// Example:
//   absl::StatusOr<std::vector<v1::TableStatus>> tables =
//       internal::ListTablesCall(client);
//
// Each call goes over `client`'s channel with its ClientOptions::timeout
// as the deadline, and fails as the Client method of the same name does
// (msgq/client.h): the server's code and message, UNAVAILABLE,
// DEADLINE_EXCEEDED, and the INVALID_ARGUMENT checks made before any call.
// Thread-safe, as Client.
#ifndef MSGQ_CLIENT_INTERNAL_MESSAGING_CALLS_H_
#define MSGQ_CLIENT_INTERNAL_MESSAGING_CALLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "msgq/client.h"
#include "msgq/table_ref.h"
#include "msgq/v1/messaging.pb.h"

namespace msgq::internal {

absl::StatusOr<std::vector<v1::DeadMessage>> ListDeadCall(
    const Client& client, const TableRef& table, int32_t limit,
    absl::string_view after_id);

absl::StatusOr<v1::Group> CreateGroupCall(const Client& client,
                                          const TableRef& table,
                                          const std::string& group,
                                          const std::string& from,
                                          const std::string& filter);

absl::StatusOr<std::vector<v1::Group>> ListGroupsCall(const Client& client,
                                                      const TableRef& table);

absl::StatusOr<std::vector<v1::TableStatus>> ListTablesCall(
    const Client& client);

}  // namespace msgq::internal

#endif  // MSGQ_CLIENT_INTERNAL_MESSAGING_CALLS_H_
