// The measured phases of a run. Each creates its own table in the bench
// database, preloads or produces, measures, verifies (every message acked,
// none lost) and appends its time series.
//
// Run from the main thread one after another; they share the context's admin
// connection.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PHASES_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PHASES_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/results.h"

namespace msgq::bench {

struct BenchContext {
  BenchOptions options;
  MysqlOptions mysql;
  MysqlConnection* admin = nullptr;
  std::string msgq_address;
  pid_t msgqd_pid = 0;     // 0: not ours (no CPU/RSS)
  pid_t mariadbd_pid = 0;  // 0: unknown
};

// Creates and preloads the relay's outbox table (before anything is
// measured).
absl::StatusOr<double> PrepareRelay(BenchContext& ctx);
// Creates and preloads the message table of a drain with `batch_size`.
absl::StatusOr<double> PrepareDrain(BenchContext& ctx, int batch_size);

// Runs the relay baseline over the prepared outbox.
absl::StatusOr<RelayResult> RunRelayPhase(BenchContext& ctx,
                                          std::vector<SeriesPoint>* series);
// Drains the prepared message table of `batch_size` through msgqd.
absl::StatusOr<DrainResult> RunDrainPhase(BenchContext& ctx, int batch_size,
                                          std::vector<SeriesPoint>* series);
// Producers at the offered rate (over options.tables tables) while
// subscribers ack.
absl::StatusOr<SustainedResult> RunSustainedPhase(
    BenchContext& ctx, std::vector<SeriesPoint>* series);

// Table names.
std::string DrainTableName(int batch_size);
inline constexpr char kOutboxTable[] = "outbox";
inline constexpr char kSustainedTable[] = "sustained";
// The sustained phase's `tables` table names: kSustainedTable for one,
// sustained_0000, sustained_0001, ... for more.
std::vector<std::string> SustainedTableNames(int tables);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PHASES_H_
