// The results of one msgq-bench run, filled by the phases and read by the
// report writers.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_RESULTS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_RESULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/msgq_bench/bench_results.pb.h"

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

// The phases' results are bench.json's messages (bench_results.proto).
using RelayResult = pb::Relay;
using DrainResult = pb::Drain;
using SustainedResult = pb::Sustained;
using Environment = pb::Environment;

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
