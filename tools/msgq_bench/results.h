// The results of one msgq-bench run: plain structs filled by the phases and
// read by the report writers.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_RESULTS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_RESULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/msgq_bench/cost_meter.h"
#include "tools/msgq_bench/percentiles.h"
#include "tools/msgq_bench/subscribers.h"

namespace msgq::bench {

// One row of the time series (one sampling interval of one phase).
struct SeriesPoint {
  std::string phase;           // "relay", "drain_b100", "sustained"
  double t_s = 0;              // end of the interval, since the phase started
  double dt_s = 0;             // length of the interval
  double delivered_per_s = 0;  // msgq: first receipts; relay: rows relayed
  double acked_per_s = 0;
  double offered_per_s = 0;          // sustained: commits
  double backlog = 0;                // sustained: committed - received
  std::optional<double> lat_p50_ms;  // sustained: receipts in this interval
  std::optional<double> lat_p99_ms;
  std::optional<double> lat_max_ms;
  double msgqd_rss_mib = 0;
  double msgqd_cpu_pct = 0;  // of one core
};

struct RelayResult {
  int workers = 0;
  int batch = 0;
  int64_t messages = 0;
  int64_t processed = 0;
  int64_t batches = 0;
  int64_t retries = 0;
  double preload_s = 0;
  double settle_s = 0;
  double seconds = 0;
  double msgs_per_s = 0;
  int64_t left_in_db = -1;  // rows still unprocessed afterwards
  PhaseCost cost;
  std::string perf_report;  // paths, when --perf
  bool ok = false;
};

struct DrainResult {
  std::string phase;
  std::string table;
  int batch_size = 0;
  int cache_size = 0;
  int64_t messages = 0;
  double preload_s = 0;
  double settle_s = 0;
  // Subscribe -> first delivery, and first delivery -> every row acked.
  double startup_s = 0;
  double seconds = 0;
  double msgs_per_s = 0;
  // msgq / relay msgs/s (0 without a relay run).
  double ratio = 0;
  bool completed = false;  // every row acked before the timeout
  int64_t received = 0;    // distinct ids
  int64_t duplicates = 0;
  int64_t unexpected = 0;
  int64_t lost = 0;
  int64_t unacked_in_db = -1;
  int64_t redelivered_in_db = -1;  // rows with epoch > 1 (sent again)
  SubscriberPool::Stats subscribers;
  PhaseCost cost;
  std::string perf_report;  // paths, when --perf
  bool ok = false;
};

struct SustainedResult {
  int producers = 0;
  double offered_rate = 0;
  double duration_s = 0;
  int64_t messages = 0;
  int64_t committed = 0;
  int64_t producer_errors = 0;
  double achieved_offered_rate = 0;  // committed / producing time
  double max_producer_lag_ms = 0;
  // First receipts within the producing window, per second of it, and as a
  // share of what was committed in it.
  int64_t delivered_in_window = 0;
  double delivered_rate = 0;
  double delivered_pct = 0;
  // Committed within the window, and the delivered share of those (what
  // msgq controls when MySQL cannot take the offered rate).
  int64_t committed_in_window = 0;
  double delivered_pct_of_committed = 0;
  double tail_s = 0;    // after the last commit until everything arrived
  Percentiles latency;  // receipt - COMMIT returned
  Percentiles latency_commit_start;  // receipt - COMMIT sent
  int64_t before_commit_returned = 0;
  int64_t received = 0;
  int64_t duplicates = 0;
  int64_t unexpected = 0;
  int64_t lost = 0;
  int64_t unacked_in_db = -1;
  std::string discovery;  // as msgqd reports it: "poll" or "binlog"
  SubscriberPool::Stats subscribers;
  PhaseCost cost;
  bool ok = false;
};

struct Environment {
  std::string date_utc;
  std::string host;
  std::string cpu_model;
  int cpus = 0;
  int64_t mem_total_mib = 0;
  std::string kernel;
  std::string mysql_version;
  std::string mysql_settings;  // flush/binlog settings as read back
  std::string msgq_commit;
  std::string command;
  std::string msgqd;  // path or "external ADDRESS"
};

struct BenchResults {
  Environment env;
  std::string table_comment;  // of the first drain table
  std::optional<RelayResult> relay;
  std::vector<DrainResult> drains;
  std::optional<SustainedResult> sustained;
  std::vector<SeriesPoint> series;
  bool ok = true;
  std::vector<std::string> notes;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_RESULTS_H_
