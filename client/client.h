// Client makes the unary calls of the msgq.v1.Messaging API: settling
// messages (Ack, Nack, Extend), handling dead ones (ListDead, Redrive) and
// listing tables. For receiving messages, see subscriber.h.
//
// Every call carries a deadline (ClientOptions::timeout). Errors are
// absl::Status values with the server's code and message unchanged, plus
// gRPC's own codes for transport problems: UNAVAILABLE when the server cannot
// be reached (retry later) and DEADLINE_EXCEEDED when it did not answer in
// time. Calls fail fast while the server is down rather than waiting for it.
//
// Example:
//   absl::StatusOr<std::unique_ptr<Client>> client =
//       Client::Connect("127.0.0.1:15999");
//   if (!client.ok()) return client.status();
//   absl::StatusOr<int64_t> acked = (*client)->Ack("orders", {"17", "18"});
//   absl::StatusOr<NackResult> nacked = (*client)->Nack(
//       "orders", {msg.delivery()},
//       {.delay = absl::Seconds(30), .reason = "backend down"});
//   absl::StatusOr<std::vector<v1::TableStatus>> tables =
//       (*client)->ListTables();
//
// Thread-safe: calls may be made concurrently from any thread.
#ifndef MSGQ_CLIENT_CLIENT_H_
#define MSGQ_CLIENT_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/message.h"
#include "client/table_ref.h"
#include "msgq/v1/messaging.grpc.pb.h"

namespace msgq {

struct ClientOptions {
  // Deadline of each call, measured from its start.
  absl::Duration timeout = absl::Seconds(10);
};

// What to do with nacked deliveries (MessageNackRequest without the table
// and the deliveries).
struct NackParams {
  // Retry after this long (zero = as soon as possible); nullopt = after the
  // table's backoff for the message's epoch. Ignored by the server when dead.
  std::optional<absl::Duration> delay;
  // Why; stored in the row's last_error column if the table has one.
  std::string reason;
  // Dead at once, whatever the attempts left.
  bool dead = false;
};

struct NackResult {
  int64_t retried = 0;  // rows that will be sent again
  int64_t dead = 0;     // rows that died
};

// A channel to `target` ("host:port", or any gRPC target URI) without TLS.
// Connects lazily; never fails here. Unlike gRPC's defaults (1s growing to
// 120s), the channel retries a lost connection after 100ms growing to 5s, so
// a Subscriber's own backoff is not stretched by the transport's, and it
// sends a keepalive ping every 6 minutes on an idle connection (slower than
// the 5-minute minimum gRPC servers accept by default) so that a silently
// dropped connection is noticed.
// For TLS, client certificates and bearer tokens see NewSecureChannel in
// client/credentials.h.
std::shared_ptr<grpc::Channel> NewChannel(absl::string_view target);

// The channel arguments of NewChannel (reconnect backoff, keepalive).
grpc::ChannelArguments MsgqChannelArguments();

class Client {
 public:
  // A client of the server at `target`. Returns INVALID_ARGUMENT when `target`
  // is empty or `options.timeout` is not positive. Does not contact the
  // server: an unreachable server shows up as UNAVAILABLE on the first call.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      absl::string_view target, const ClientOptions& options = {});

  // A client over an existing channel (which may be shared, e.g. with a
  // Subscriber). Requires a non-null channel.
  explicit Client(std::shared_ptr<grpc::ChannelInterface> channel,
                  const ClientOptions& options = {});

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Acknowledges the messages of `table` with the given ids (as streamed in
  // column 0). Returns how many went from unacked to acked; unknown and
  // already-acked ids are not errors. An empty `ids` returns 0 without a call.
  // Errors: NOT_FOUND (unknown table), INVALID_ARGUMENT (malformed id or empty
  // name), FAILED_PRECONDITION (table failed to load), UNAVAILABLE (server or
  // its MySQL unreachable: retry), DEADLINE_EXCEEDED.
  absl::StatusOr<int64_t> Ack(const TableRef& table,
                              absl::Span<const std::string> ids);

  // The calls below take the same table errors as Ack: NOT_FOUND,
  // INVALID_ARGUMENT (malformed id, empty name), FAILED_PRECONDITION,
  // UNAVAILABLE (retry), DEADLINE_EXCEEDED; and UNIMPLEMENTED from a server
  // older than these calls.

  // Hands `deliveries` back unprocessed: retried after `params.delay` (or the
  // table's backoff) or, with `params.dead`, dead at once; the table's
  // msgq_max_attempts/msgq_max_age may turn a retry into a death. Counts only
  // the deliveries this client still holds (see Delivery in the proto). An
  // empty `deliveries` returns {0, 0} without a call. Also INVALID_ARGUMENT
  // for a negative delay (checked here, without a call).
  absl::StatusOr<NackResult> Nack(const TableRef& table,
                                  absl::Span<const Delivery> deliveries,
                                  const NackParams& params);

  // Keeps `deliveries` from being sent to anyone else for `duration` from
  // now. Returns how many moved; a delivery no longer held counts 0. An empty
  // `deliveries` returns 0 without a call. Also INVALID_ARGUMENT for a
  // `duration` <= 0 (checked here) or above the server's --max_extend.
  absl::StatusOr<int64_t> Extend(const TableRef& table,
                                 absl::Span<const Delivery> deliveries,
                                 absl::Duration duration);

  // Makes the dead messages with `ids` due now with epoch 0. Returns how many
  // went from dead to due; other ids count 0. An empty `ids` returns 0
  // without a call.
  absl::StatusOr<int64_t> Redrive(const TableRef& table,
                                  absl::Span<const std::string> ids);
  // Redrives every dead message of `table`.
  absl::StatusOr<int64_t> RedriveAll(const TableRef& table);

  // One page of the dead messages of `table`, by id: at most `limit` (0 = the
  // server's default of 100, capped at 10000) with ids after `after_id`
  // (empty = from the first). Also INVALID_ARGUMENT for a negative limit
  // (checked here).
  absl::StatusOr<std::vector<v1::DeadMessage>> ListDead(
      const TableRef& table, int32_t limit = 0,
      absl::string_view after_id = "");

  // Pauses (`paused`) or resumes sending `table` on every msgqd serving it
  // (MySQL keeps the state). Pausing a paused table is not an error.
  // Errors: as Ack (no ids), plus UNIMPLEMENTED from an older server.
  absl::Status SetPaused(const TableRef& table, bool paused);

  // Consumer groups (docs/design/consumer-groups.md). CreateGroup makes
  // group `group` of `table`, starting at `from` ("latest" when empty,
  // "earliest", "gtid:D-S-N[,...]") with `filter` ("" = every message), and
  // returns it as stored. Errors: as SetPaused; INVALID_ARGUMENT (the
  // group name, the filter, `from`), ALREADY_EXISTS, UNIMPLEMENTED
  // ("time:", or an older server).
  absl::StatusOr<v1::Group> CreateGroup(const TableRef& table,
                                        const std::string& group,
                                        const std::string& from,
                                        const std::string& filter);
  // The groups of `table`, or of every table when its name is empty (of
  // its keyspace when that is set). Errors: as SetPaused for a named table.
  absl::StatusOr<std::vector<v1::Group>> ListGroups(const TableRef& table);
  // Deletes group `group` of `table`. NOT_FOUND, naming the table's
  // groups, when it has none of that name.
  absl::Status DeleteGroup(const TableRef& table, const std::string& group);

  // Every message table of the server's databases, loaded or not, in the
  // server's order. Errors: UNAVAILABLE, DEADLINE_EXCEEDED.
  absl::StatusOr<std::vector<v1::TableStatus>> ListTables();

  const std::shared_ptr<grpc::ChannelInterface>& channel() const {
    return channel_;
  }

 private:
  absl::StatusOr<int64_t> SendRedrive(const v1::RedriveRequest& request);

  // Constant after construction.
  const std::shared_ptr<grpc::ChannelInterface> channel_;
  const ClientOptions options_;
  const std::unique_ptr<v1::Messaging::Stub> stub_;
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_CLIENT_H_
