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
//   absl::StatusOr<std::vector<TableStatus>> tables = (*client)->ListTables();
//
// The answers are plain structs of this header (DeadMessage, Group,
// TableStatus), not the generated protobuf messages, so that a change of
// the wire format does not change this API; times are absl::Time and
// absl::Duration.
//
// Thread-safe: calls may be made concurrently from any thread.
#ifndef MSGQ_CLIENT_H_
#define MSGQ_CLIENT_H_

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
#include "msgq/message.h"
#include "msgq/table_ref.h"

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
  // The consumer group the deliveries are of; "" = the default group.
  std::string group;
};

struct NackResult {
  int64_t retried = 0;  // rows that will be sent again
  int64_t dead = 0;     // rows that died
};

// A dead message of a table (ListDead).
struct DeadMessage {
  std::string id;     // column 0, text form
  int64_t epoch = 0;  // sends before it died
  // The last failure's reason; empty when the table has no last_error
  // column.
  std::string last_error;
  // When it died / was first enqueued; nullopt when the table has no
  // time_dead / time_created column.
  std::optional<absl::Time> time_dead;
  std::optional<absl::Time> time_created;

  bool operator==(const DeadMessage&) const = default;
};

// A consumer group of a message table (CreateGroup, ListGroups).
struct Group {
  std::string keyspace;
  std::string table;
  std::string name;
  // The binlog GTID position below which every message is settled for the
  // group ("0-1-4711,1-2-7"); "" = before every transaction (earliest).
  std::string floor_gtid;
  // The group's filter, in canonical form; "" = every message.
  std::string filter;
  absl::Time created_at;  // on MySQL's clock
  bool paused = false;

  bool operator==(const Group&) const = default;
};

// The settings a loaded table runs with (its comment's directives and
// msgqd's defaults; docs/tables.md).
struct TableSettings {
  absl::Duration ack_wait;
  absl::Duration purge_after;
  int32_t batch_size = 0;
  int32_t cache_size = 0;
  absl::Duration poller_interval;
  absl::Duration min_backoff;
  absl::Duration max_backoff;  // zero = unbounded
  std::vector<std::string> message_cols;
  int32_t max_attempts = 0;       // 0 = unlimited
  absl::Duration max_age;         // zero = unlimited
  absl::Duration dead_retention;  // zero = kept until redriven or deleted
  double rate_limit = 0;          // sends per second; 0 = unlimited
  double rate_burst = 0;
  // msgq_order_by and msgq_fair_by: the key column as the table spells it;
  // empty when not set.
  std::string order_by;
  std::string fair_by;
  // msgq_concurrency_by and msgq_concurrency: at most `concurrency`
  // messages of one value of that column in flight; "" and 0 when not set.
  std::string concurrency_by;
  int32_t concurrency = 0;

  bool operator==(const TableSettings&) const = default;
};

// Which msgqd sends a table, in the view of the msgqd that answered
// (docs/several-instances.md).
struct Ownership {
  // "owner" (it holds the lease and sends), "standby" (another instance,
  // or none yet, holds it), "off" (leases disabled: it sends without
  // asking), "unknown" (the lease table cannot be read; see error).
  std::string state;
  std::string owner;  // the instance holding the lease; empty when none
  // When that owner took it and when its lease ends, on MySQL's clock;
  // nullopt when unknown.
  std::optional<absl::Time> since;
  std::optional<absl::Time> expires;
  std::string error;  // why the lease could not be read or taken

  bool operator==(const Ownership&) const = default;
};

// A message table of the server (ListTables).
struct TableStatus {
  std::string keyspace;
  std::string name;
  bool loaded = false;
  std::string error;  // why it failed to load; empty when loaded
  int32_t subscribers = 0;
  std::string discovery;  // how new messages are found: "binlog" or "poll"
  TableSettings settings;
  int64_t cached = 0;     // queued in msgqd's cache
  int64_t in_flight = 0;  // sent and not yet settled
  int64_t dead = 0;       // -1 until known
  // Counters since this msgqd started serving the table (rates come from
  // two samples; see TableStatus in proto/msgq/v1/messaging.proto).
  int64_t sent = 0;
  int64_t redelivered = 0;
  int64_t postponed = 0;
  int64_t acked = 0;
  int64_t nacked = 0;
  int64_t died = 0;
  int64_t purged = 0;
  int64_t polls = 0;
  Ownership ownership;
  bool paused = false;  // paused with SetPaused: nothing is sent
  // msgq_concurrency_by: keys with msgq_concurrency messages in flight now;
  // 0 without the directive.
  int64_t keys_at_limit = 0;

  bool operator==(const TableStatus&) const = default;
};

// A channel to `target` ("host:port", or any gRPC target URI) without TLS.
// Connects lazily; never fails here. Unlike gRPC's defaults (1s growing to
// 120s), the channel retries a lost connection after 100ms growing to 5s, so
// a Subscriber's own backoff is not stretched by the transport's, and it
// sends a keepalive ping every 6 minutes on an idle connection (slower than
// the 5-minute minimum gRPC servers accept by default) so that a silently
// dropped connection is noticed.
// For TLS, client certificates and bearer tokens see NewSecureChannel in
// msgq/credentials.h.
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
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Acknowledges the messages of `table` with the given ids (as streamed in
  // column 0). Returns how many went from unacked to acked; unknown and
  // already-acked ids are not errors. An empty `ids` returns 0 without a call.
  // Errors: NOT_FOUND (unknown table), INVALID_ARGUMENT (malformed id or empty
  // name), FAILED_PRECONDITION (table failed to load), UNAVAILABLE (server or
  // its MySQL unreachable: retry), DEADLINE_EXCEEDED. With `group`, the
  // acks are that consumer group's alone (docs/design/consumer-groups.md):
  // the count is of the ids pending for the group; also NOT_FOUND naming
  // the table's groups, INVALID_ARGUMENT for a malformed group name.
  absl::StatusOr<int64_t> Ack(const TableRef& table,
                              absl::Span<const std::string> ids,
                              absl::string_view group = "");

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
  absl::StatusOr<std::vector<DeadMessage>> ListDead(
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
  absl::StatusOr<Group> CreateGroup(const TableRef& table,
                                    const std::string& group,
                                    const std::string& from,
                                    const std::string& filter);
  // The groups of `table`, or of every table when its name is empty (of
  // its keyspace when that is set). Errors: as SetPaused for a named table.
  absl::StatusOr<std::vector<Group>> ListGroups(const TableRef& table);
  // Deletes group `group` of `table`. NOT_FOUND, naming the table's
  // groups, when it has none of that name.
  absl::Status DeleteGroup(const TableRef& table, const std::string& group);

  // Every message table of the server's databases, loaded or not, in the
  // server's order. Errors: UNAVAILABLE, DEADLINE_EXCEEDED.
  absl::StatusOr<std::vector<TableStatus>> ListTables();

  // The channel and options given at construction.
  const std::shared_ptr<grpc::ChannelInterface>& channel() const {
    return channel_;
  }
  const ClientOptions& options() const { return options_; }

 private:
  class Stub;  // the generated gRPC stub, in client.cc

  // Constant after construction.
  const std::shared_ptr<grpc::ChannelInterface> channel_;
  const ClientOptions options_;
  const std::unique_ptr<Stub> stub_;
};

}  // namespace msgq

#endif  // MSGQ_CLIENT_H_
