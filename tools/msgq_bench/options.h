// BenchOptions: everything one msgq-bench run is configured with, filled from
// command-line flags (options.cc defines them with their defaults;
// `msgq-bench --help` lists them). A plain value type.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_OPTIONS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

// The relay baseline's fixed shape: the seeds' relay, 5 workers x 1000 rows.
inline constexpr int kRelayWorkers = 5;
inline constexpr int kRelayBatch = 1000;

struct BenchOptions {
  bool run_drain = true;  // --mode
  bool run_sustained = true;
  bool run_relay = true;

  // Drain.
  int64_t messages = 1000000;
  int subscribers = 4;
  std::vector<int> batch_sizes = {100};  // one msgq drain per value
  double drain_timeout_s = 1800;

  // Sustained. Message tables the offered load is spread over (round-robin
  // per message); subscriber streams: max(subscribers, tables), round-robin
  // over the tables.
  int producers = 8;
  double rate = 5000;
  double duration_s = 60;
  int tables = 1;
  // How long to wait after the producers stop for the rest to arrive.
  double tail_timeout_s = 120;

  // The message tables' comment.
  int cache_size = 10000;
  double poller_interval_s = 0.1;
  double ack_wait_s = 30;
  std::string directives;  // appended to the comment after a comma

  // Subscribers.
  std::string ack_mode = "async";  // or "sync"
  int max_acks_in_flight = 32;
  std::string stream_reader = "auto";  // or "thread", "callback"

  // Environment.
  std::string mysql_socket;  // empty: start a private MariaDB
  std::string msgq_server;   // empty: start msgqd
  std::string msgqd_path;
  std::vector<std::string> msgqd_args;
  std::string source_dir;
  std::string work_dir;  // empty: a fresh temporary directory
  bool keep_work_dir = false;
  bool durable = true;
  bool binlog = true;
  // Extra mariadbd options for the private server (e.g. a slow log).
  std::vector<std::string> mariadb_args;
  std::string database = "msgq_bench";
  std::string out_dir = "bench-out";
  int payload_bytes = 60;
  bool perf = false;
  bool plot = true;
};

// Reads the parsed flags. INVALID_ARGUMENT names the bad flag.
absl::StatusOr<BenchOptions> OptionsFromFlags();

// bench.json's "options".
pb::Options ToProto(const BenchOptions& options);

// Whether the subscribers of `tables` message tables are read by callback
// reactors (--stream_reader=auto: when there are several tables).
bool CallbackReader(const BenchOptions& options, int tables);

// The comment of a message table for `batch_size` and the options.
std::string MessageTableComment(const BenchOptions& options, int batch_size);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_OPTIONS_H_
