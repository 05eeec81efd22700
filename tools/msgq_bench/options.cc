#include "tools/msgq_bench/options.h"

#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#ifndef MSGQ_BENCH_MSGQD_PATH
#define MSGQ_BENCH_MSGQD_PATH "msgqd"
#endif
#ifndef MSGQ_BENCH_SOURCE_DIR
#define MSGQ_BENCH_SOURCE_DIR "."
#endif

ABSL_FLAG(std::string, mode, "all",
          "drain (relay baseline + msgq drain), sustained, or all");
ABSL_FLAG(bool, relay, true, "Run the relay baseline in drain mode");
ABSL_FLAG(int, messages, 1000000, "Drain: messages preloaded");
ABSL_FLAG(int, subscribers, 4,
          "gRPC subscriber streams in all (each its own channel, read by "
          "callback reactors: no thread per stream); with "
          "--tables=N, max(subscribers, N) streams spread round-robin over "
          "the tables, so every table has at least one");
ABSL_FLAG(std::string, batch_size, "100",
          "vt_batch_size of the message table; a comma-separated list runs "
          "one msgq drain per value (a sweep)");
ABSL_FLAG(std::string, partitioned, "false",
          "Drain: false (a plain message table), true (RANGE-partitioned on "
          "time_created, msgq_partition_interval=86400, as "
          "schema/message_table_partitioned.sql), or false,true: both, one "
          "after the other in this run, for every --batch_size");
ABSL_FLAG(int, cache_size, 10000, "vt_cache_size of the message tables");
ABSL_FLAG(std::string, directives, "",
          "More directives for the message tables' comment, e.g. "
          "msgq_rate_limit=1000000 (to measure a feature's cost)");
ABSL_FLAG(int, keys, 0,
          "Gives the message tables a key column k = id % keys (stored, with "
          "INDEX (time_acked, k, priority, time_next)) for directives such "
          "as msgq_concurrency_by=k; 0 = no such column");
ABSL_FLAG(std::string, start_barrier, "",
          "Drain: before the msgq drain is timed, write PREFIX.ready.PID and "
          "wait for PREFIX.go to exist (several benches started together, "
          "as tools/bench --shards=N does); empty = no wait");
ABSL_FLAG(double, poller_interval, 0.1,
          "vt_poller_interval (s) of the message tables");
ABSL_FLAG(double, ack_wait, 30, "vt_ack_wait (s) of the message tables");
ABSL_FLAG(double, drain_timeout, 1800, "Drain: give up after this many s");
ABSL_FLAG(int, producers, 8, "Sustained: producer connections");
ABSL_FLAG(double, rate, 5000, "Sustained: total offered msgs/s");
ABSL_FLAG(double, duration, 60, "Sustained: seconds of producing");
ABSL_FLAG(int, tables, 1,
          "Sustained: message tables (sustained, or sustained_0000.. for "
          "more than one); the --rate is the total, each message goes to the "
          "next table round-robin");
ABSL_FLAG(double, tail_timeout, 120,
          "Sustained: s to wait after producing for every message to arrive");
ABSL_FLAG(int, max_acks_in_flight, 32,
          "Ack RPCs in flight per stream; with that many, the stream's next "
          "read waits for one to return (8 caps a 1M drain at ~13k msgs/s: "
          "msgqd settles the acks it holds once per round)");
ABSL_FLAG(std::string, mysql_socket, "",
          "Use this MySQL/MariaDB server (Unix socket) instead of starting a "
          "private one");
ABSL_FLAG(std::string, msgq_server, "",
          "Use this msgqd (HOST:PORT, serving --database) instead of starting "
          "one; its CPU and RSS are then not measured");
ABSL_FLAG(std::string, msgqd_path, MSGQ_BENCH_MSGQD_PATH, "msgqd binary");
ABSL_FLAG(std::string, msgqd_args, "",
          "Extra msgqd flags, space-separated (e.g. "
          "--max_batches_per_subscriber=4)");
ABSL_FLAG(std::string, source_dir, MSGQ_BENCH_SOURCE_DIR,
          "msgq source tree (for tools/mariadb-private, bench.gp and "
          "perf_phase.sh)");
ABSL_FLAG(std::string, work_dir, "",
          "Directory for the private MariaDB and logs (default: a new "
          "temporary directory, removed afterwards)");
ABSL_FLAG(bool, keep_work_dir, false, "Keep the temporary work directory");
ABSL_FLAG(bool, durable, true,
          "Private MariaDB: innodb_flush_log_at_trx_commit=1, sync_binlog=1");
ABSL_FLAG(bool, binlog, true, "Private MariaDB: binlog on (ROW)");
ABSL_FLAG(std::string, mariadb_args, "",
          "Private MariaDB: extra mariadbd options, space-separated (e.g. "
          "\"--slow-query-log=1 --long-query-time=0\" to see where MySQL's "
          "time goes; summarise with tools/msgq_bench/slowlog_summary.py)");
ABSL_FLAG(int, buffer_pool_mb, 0,
          "Private MariaDB: innodb_buffer_pool_size in MiB (e.g. 32, so that "
          "a backlog of 10 times the pool fits the disk easily); 0 = "
          "tools/mariadb-private's 512");
ABSL_FLAG(double, commit_probe_s, 3,
          "Seconds of the machine probe run first: autocommitted single-row "
          "INSERTs into a scratch InnoDB table (commits/s) and 200 "
          "write+fdatasync of 4 KiB in the data directory (p50/p99); 0 = "
          "no probe");
ABSL_FLAG(std::string, database, "msgq_bench",
          "Database created (dropped first) for the bench tables");
ABSL_FLAG(std::string, out_dir, "bench-out",
          "Where bench.json, timeseries.csv, bench.png and logs go");
ABSL_FLAG(int, payload_bytes, 60, "Bytes of each JSON payload");
ABSL_FLAG(bool, perf, false,
          "Record `perf record -g` of msgqd and mariadbd during each drain "
          "phase into out_dir/{msgqd,mariadbd}-PHASE.perf.{data,txt} (with "
          "tools/msgq_bench/perf_phase.sh)");
ABSL_FLAG(bool, plot, true, "Draw bench.png with gnuplot");

namespace msgq::bench {
namespace {

absl::Status Invalid(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// Whether `s` has only letters, digits and characters of `also`.
bool Only(const std::string& s, absl::string_view also) {
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        also.find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<pb::Options> OptionsFromFlags() {
  pb::Options o;
  o.set_mode(absl::GetFlag(FLAGS_mode));
  if (o.mode() != "all" && o.mode() != "drain" && o.mode() != "sustained") {
    return Invalid("mode", "must be drain, sustained or all");
  }
  o.set_relay(absl::GetFlag(FLAGS_relay));
  o.set_messages(absl::GetFlag(FLAGS_messages));
  o.set_subscribers(absl::GetFlag(FLAGS_subscribers));
  for (absl::string_view piece : absl::StrSplit(absl::GetFlag(FLAGS_batch_size),
                                                ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(piece, &v) || v <= 0) {
      return Invalid("batch_size", "positive integers, comma-separated");
    }
    o.add_batch_size(v);
  }
  if (o.batch_size().empty()) return Invalid("batch_size", "empty");
  for (absl::string_view piece : absl::StrSplit(
           absl::GetFlag(FLAGS_partitioned), ',', absl::SkipEmpty())) {
    if (piece != "false" && piece != "true") {
      return Invalid("partitioned", "false, true or false,true");
    }
    o.add_partitioned(piece == "true");
  }
  if (o.partitioned().empty()) return Invalid("partitioned", "empty");
  o.set_cache_size(absl::GetFlag(FLAGS_cache_size));
  o.set_directives(absl::GetFlag(FLAGS_directives));
  o.set_keys(absl::GetFlag(FLAGS_keys));
  o.set_start_barrier(absl::GetFlag(FLAGS_start_barrier));
  o.set_poller_interval(absl::GetFlag(FLAGS_poller_interval));
  o.set_ack_wait(absl::GetFlag(FLAGS_ack_wait));
  o.set_drain_timeout(absl::GetFlag(FLAGS_drain_timeout));
  o.set_producers(absl::GetFlag(FLAGS_producers));
  o.set_rate(absl::GetFlag(FLAGS_rate));
  o.set_duration(absl::GetFlag(FLAGS_duration));
  o.set_tables(absl::GetFlag(FLAGS_tables));
  o.set_tail_timeout(absl::GetFlag(FLAGS_tail_timeout));
  o.set_max_acks_in_flight(absl::GetFlag(FLAGS_max_acks_in_flight));
  o.set_mysql_socket(absl::GetFlag(FLAGS_mysql_socket));
  o.set_msgq_server(absl::GetFlag(FLAGS_msgq_server));
  o.set_msgqd_path(absl::GetFlag(FLAGS_msgqd_path));
  for (absl::string_view arg : absl::StrSplit(absl::GetFlag(FLAGS_msgqd_args),
                                              ' ', absl::SkipEmpty())) {
    o.add_msgqd_args(std::string(arg));
  }
  o.set_source_dir(absl::GetFlag(FLAGS_source_dir));
  o.set_work_dir(absl::GetFlag(FLAGS_work_dir));
  o.set_keep_work_dir(absl::GetFlag(FLAGS_keep_work_dir));
  o.set_durable(absl::GetFlag(FLAGS_durable));
  o.set_binlog(absl::GetFlag(FLAGS_binlog));
  for (absl::string_view arg : absl::StrSplit(absl::GetFlag(FLAGS_mariadb_args),
                                              ' ', absl::SkipEmpty())) {
    o.add_mariadb_args(std::string(arg));
  }
  o.set_buffer_pool_mb(absl::GetFlag(FLAGS_buffer_pool_mb));
  o.set_commit_probe_s(absl::GetFlag(FLAGS_commit_probe_s));
  o.set_database(absl::GetFlag(FLAGS_database));
  o.set_out_dir(absl::GetFlag(FLAGS_out_dir));
  o.set_payload_bytes(absl::GetFlag(FLAGS_payload_bytes));
  o.set_perf(absl::GetFlag(FLAGS_perf));
  o.set_plot(absl::GetFlag(FLAGS_plot));

  const std::pair<const char*, double> positive[] = {
      {"messages", o.messages()},
      {"subscribers", o.subscribers()},
      {"cache_size", o.cache_size()},
      {"poller_interval", o.poller_interval()},
      {"ack_wait", o.ack_wait()},
      {"producers", o.producers()},
      {"rate", o.rate()},
      {"duration", o.duration()},
      {"max_acks_in_flight", o.max_acks_in_flight()}};
  for (const auto& [flag, value] : positive) {
    if (!(value > 0)) return Invalid(flag, "must be positive");
  }
  if (o.tables() <= 0 || o.tables() > 10000) {
    return Invalid("tables", "from 1 to 10000");
  }
  if (o.keys() < 0) return Invalid("keys", "0 or more");
  if (o.buffer_pool_mb() < 0) return Invalid("buffer_pool_mb", "0 or more");
  if (o.buffer_pool_mb() > 0 && !o.mysql_socket().empty()) {
    return Invalid("buffer_pool_mb", "only for the private MariaDB");
  }
  if (!(o.commit_probe_s() >= 0)) {
    return Invalid("commit_probe_s", "0 or more");
  }
  if (!Only(o.directives(), "_=,.")) {
    return Invalid("directives", "name=value pairs separated by commas");
  }
  if (o.payload_bytes() < 32) return Invalid("payload_bytes", "at least 32");
  if (o.database().empty()) return Invalid("database", "empty");
  if (!Only(o.database(), "_")) {
    return Invalid("database", "letters, digits and _ only");
  }
  o.set_table_comment(MessageTableComment(o, o.batch_size(0)));
  return o;
}

std::string MessageTableComment(const pb::Options& o, int batch_size) {
  return absl::StrCat("vitess_message,vt_ack_wait=", o.ack_wait(),
                      ",vt_purge_after=86400,vt_batch_size=", batch_size,
                      ",vt_cache_size=", o.cache_size(),
                      ",vt_poller_interval=", o.poller_interval(),
                      o.directives().empty() ? "" : ",", o.directives());
}

}  // namespace msgq::bench
