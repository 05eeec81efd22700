#include "server/msgqd_flags.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "server/mysql_flags.h"

ABSL_FLAG(std::string, databases, "msgq",
          "Comma-separated databases to serve; a request with an empty "
          "keyspace gets the first of them that has the table");
ABSL_FLAG(std::string, listen, "127.0.0.1:15999",
          "gRPC listen address; port 0 picks a free port");
ABSL_FLAG(std::string, http_listen, "127.0.0.1:15998",
          "HTTP listen address for /metrics, /healthz, /readyz and the web "
          "console; port 0 picks a free port; empty disables HTTP");
ABSL_FLAG(std::string, log_format, "text",
          "stderr log lines: 'text' (\"I2026-01-02 03:04:05.678 message\") "
          "or 'json' (one {\"time\",\"level\",\"msg\"} object per line)");
ABSL_FLAG(std::string, log_level, "info",
          "Lowest level logged: info, warning or error");
ABSL_FLAG(absl::Duration, schema_reload_interval, absl::Seconds(10),
          "How often message tables are re-read from information_schema");
ABSL_FLAG(bool, exact_counts, true,
          "Keep each table's rows by state (msgq_messages) exact from the "
          "binlog after one counting read at load, instead of counting dead "
          "rows once a minute");
ABSL_FLAG(absl::Duration, counts_reconcile, absl::Minutes(10),
          "How often the exact counts are read again from MySQL to correct "
          "changes the binlog did not show (at most 1m without the binlog)");
ABSL_FLAG(bool, binlog, true,
          "Follow the binlog for instant delivery (needs binlog_format=ROW and "
          "REPLICATION SLAVE); without it, messages are found by polling");
ABSL_FLAG(uint32_t, binlog_server_id, 0,
          "Replica server id used to follow the binlog; 0 derives one from "
          "the host name, --listen, the pid and a random value (logged), so "
          "two msgqd do not evict each other's binlog stream");
ABSL_FLAG(std::string, binlog_discovery, "image",
          "How rows named by the binlog reach the cache: 'image' (sent from "
          "the binlog's row image when every streamed column's text form can "
          "be rebuilt from it, else read by primary key), 'fetch' (read by "
          "primary key, only those rows) or 'poll' (the event triggers a "
          "poll)");
ABSL_FLAG(bool, ack_lane, false,
          "Write a table's acks on a pooled connection of their own, in "
          "parallel with its polls and postpones (needs "
          "--mysql_max_connections to leave the tables at least 2). Off by "
          "default: on 2 cores it cost mysqld more CPU than it gained");
ABSL_FLAG(absl::Duration, postpone_grace, absl::ZeroDuration(),
          "A sent message's postpone is written this long after the send "
          "(at most a tenth of the table's ack wait) unless its ack came "
          "first (then never): fewer row updates (e.g. 200ms); after a "
          "kill -9, messages sent within it and not acked are sent again at "
          "once. 0 (default): in the round after the send");
ABSL_FLAG(int, mysql_max_connections, 8,
          "MySQL connections msgqd holds at most, however many tables it "
          "serves: 2 follow the binlog, 1 keeps the leases (or, with "
          "--leases=false, the instance lock), the rest are shared by every "
          "table (at least 4 with --binlog, 2 without)");
ABSL_FLAG(absl::Duration, shutdown_timeout, absl::Seconds(10),
          "On SIGTERM/SIGINT, how long tables may take to flush their "
          "postpones and acks (in parallel) before msgqd exits anyway");
ABSL_FLAG(int, max_batches_per_subscriber, 2,
          "Batches written to one stream and not yet acknowledged by gRPC");
ABSL_FLAG(int64_t, max_batch_bytes, int64_t{1} << 20,
          "Bytes of rows in one streamed batch (a batch always carries at "
          "least one message)");
ABSL_FLAG(int64_t, max_message_bytes, 4000000,
          "A row larger than this is never sent: it dies with a reason "
          "giving its size, and its BLOB, TEXT and JSON columns are never "
          "read into msgqd's memory. Keep it under the clients' gRPC max "
          "receive message size (4 MiB by default)");
ABSL_FLAG(int64_t, cache_max_bytes, int64_t{32} << 20,
          "Bytes of rows one table's cache holds at most, and one poll or "
          "fetch reads at most (with vt_cache_size, which bounds the rows)");
ABSL_FLAG(bool, leases, true,
          "Any number of msgqd may serve the same tables: each table is sent "
          "by the one instance holding its lease in MySQL (tables "
          "msgq_leases and msgq_instances in the first of --databases; msgqd "
          "refuses to start without the grants for them). false: a single "
          "msgqd; a second one on the same databases is detected "
          "(GET_LOCK) and sends nothing. See docs/several-instances.md");
ABSL_FLAG(absl::Duration, lease_duration, absl::Seconds(5),
          "How long a table's lease lasts without renewal (renewed every "
          "fifth of it); a standby takes a dead owner's tables within about "
          "this plus a fifth");
ABSL_FLAG(std::string, instance_id, "",
          "This msgqd's name in lease rows and ListTables, one process at a "
          "time: a restarted msgqd with the same id resumes its leases at "
          "once (default: host:port of --listen, with the listen host "
          "unless it is a wildcard)");
ABSL_FLAG(absl::Duration, mysql_stall_timeout, absl::Seconds(10),
          "/readyz and the gRPC health check answer not ready while MySQL "
          "has left a statement of msgqd's unanswered longer than this (a "
          "full disk, a global read lock, a stopped server)");
ABSL_FLAG(absl::Duration, max_extend, absl::Hours(12),
          "The longest MessageExtend a subscriber may ask for");

namespace msgq {
namespace {

// The engine's settings of tables and their managers.
absl::Status ReadManagerFlags(MessageManager::Options& manager) {
  const std::string discovery = absl::GetFlag(FLAGS_binlog_discovery);
  if (discovery != "image" && discovery != "fetch" && discovery != "poll") {
    return absl::InvalidArgumentError(
        "--binlog_discovery must be 'image', 'fetch' or 'poll'");
  }
  manager.binlog_fetch_by_id = discovery != "poll";
  manager.binlog_row_images = discovery == "image";
  manager.ack_lane = absl::GetFlag(FLAGS_ack_lane);
  manager.postpone_grace = absl::GetFlag(FLAGS_postpone_grace);
  if (manager.postpone_grace < absl::ZeroDuration() ||
      manager.postpone_grace > absl::Seconds(10)) {
    return absl::InvalidArgumentError(
        "--postpone_grace must be between 0 and 10s");
  }
  manager.max_batches_per_subscriber =
      std::max(1, absl::GetFlag(FLAGS_max_batches_per_subscriber));
  manager.max_batch_bytes = static_cast<size_t>(
      std::max<int64_t>(1, absl::GetFlag(FLAGS_max_batch_bytes)));
  if (absl::GetFlag(FLAGS_max_message_bytes) < 1) {
    return absl::InvalidArgumentError("--max_message_bytes must be positive");
  }
  manager.max_message_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_message_bytes));
  if (absl::GetFlag(FLAGS_cache_max_bytes) < 1) {
    return absl::InvalidArgumentError("--cache_max_bytes must be positive");
  }
  manager.cache_max_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_cache_max_bytes));
  manager.max_extend = absl::GetFlag(FLAGS_max_extend);
  if (manager.max_extend <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--max_extend must be positive");
  }
  return absl::OkStatus();
}

// MySQL, the databases, the binlog and the connection budget.
absl::Status ReadMysqlFlags(Engine::Options& options) {
  absl::StatusOr<MysqlOptions> mysql = MysqlOptionsFromFlags();
  if (!mysql.ok()) return mysql.status();
  options.mysql = *std::move(mysql);
  for (absl::string_view db :
       absl::StrSplit(absl::GetFlag(FLAGS_databases), ',', absl::SkipEmpty())) {
    options.databases.emplace_back(absl::StripAsciiWhitespace(db));
  }
  if (options.databases.empty()) {
    return absl::InvalidArgumentError(
        "--databases is empty: name at least one database");
  }
  options.reload_interval = absl::GetFlag(FLAGS_schema_reload_interval);
  if (options.reload_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--schema_reload_interval must be positive");
  }
  options.mysql_stall_timeout = absl::GetFlag(FLAGS_mysql_stall_timeout);
  if (options.mysql_stall_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--mysql_stall_timeout must be positive");
  }
  options.exact_counts = absl::GetFlag(FLAGS_exact_counts);
  options.counts_reconcile = absl::GetFlag(FLAGS_counts_reconcile);
  if (options.counts_reconcile < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--counts_reconcile must be at least 1s");
  }
  options.binlog = absl::GetFlag(FLAGS_binlog);
  options.max_connections = absl::GetFlag(FLAGS_mysql_max_connections);
  // The lease keeper (or the instance lock) has a connection of its own.
  if (options.max_connections < (options.binlog ? 4 : 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mysql_max_connections must be at least ",
        options.binlog ? "4 with --binlog (2 follow the binlog, 1 keeps the "
                         "leases or the instance lock)"
                       : "2 (1 keeps the leases or the instance lock)"));
  }
  options.binlog_server_id =
      absl::GetFlag(FLAGS_binlog_server_id) != 0
          ? absl::GetFlag(FLAGS_binlog_server_id)
          : BinlogWatcher::DefaultServerId(absl::GetFlag(FLAGS_listen));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LogOptions> LogOptionsFromFlags() {
  return ParseLogOptions(absl::GetFlag(FLAGS_log_format),
                         absl::GetFlag(FLAGS_log_level));
}

absl::StatusOr<MsgqdOptions> MsgqdOptionsFromFlags() {
  MsgqdOptions out;
  Engine::Options& options = out.engine;
  if (absl::Status s = ReadMysqlFlags(options); !s.ok()) return s;
  if (absl::Status s = ReadManagerFlags(options.manager); !s.ok()) return s;
  options.sharing = absl::GetFlag(FLAGS_leases)
                        ? Engine::Options::Sharing::kLeases
                        : Engine::Options::Sharing::kInstanceLock;
  options.lease_duration = absl::GetFlag(FLAGS_lease_duration);
  if (options.lease_duration < absl::Milliseconds(500)) {
    return absl::InvalidArgumentError(
        "--lease_duration must be at least 500ms");
  }
  out.listen = absl::GetFlag(FLAGS_listen);
  out.http_listen = absl::GetFlag(FLAGS_http_listen);
  out.shutdown_timeout = absl::GetFlag(FLAGS_shutdown_timeout);
  options.address = out.listen;
  options.instance_id = absl::GetFlag(FLAGS_instance_id);
  return out;
}

}  // namespace msgq
