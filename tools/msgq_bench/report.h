// The report of a run: a readable table on stdout, bench.json, the time
// series timeseries.csv, and bench.png drawn by gnuplot (bench.gp) from the
// CSV.
//
// Thread-compatible. The writers return INTERNAL when a file cannot be
// written (or gnuplot fails), naming the file.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_
#define MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/results.h"

namespace msgq::bench {

std::string FormatTable(const BenchOptions& options,
                        const BenchResults& results);
absl::Status WriteJson(const BenchOptions& options, const BenchResults& results,
                       const std::string& path);
absl::Status WriteCsv(const BenchResults& results, const std::string& path);
// Draws `png` from `csv` with gnuplot and tools/msgq_bench/bench.gp (found
// under options.source_dir).
absl::Status WritePlot(const BenchOptions& options, const BenchResults& results,
                       const std::string& csv, const std::string& png);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_
