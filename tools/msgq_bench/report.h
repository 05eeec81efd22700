// The report of a run, into options.out_dir: the table (printed and in
// bench.txt, written first), bench.json (the results printed by protobuf's
// JSON printer, with the proto field names and every scalar), the time series
// timeseries.csv, and bench.png drawn by gnuplot with bench.gp (found under
// options.source_dir) from the CSV unless --plot=false.
//
// Thread-compatible. A file that cannot be written is logged (an error; a
// warning for the plot) and the rest are still written.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_
#define MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_

#include <vector>

#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/options.h"
#include "tools/msgq_bench/phases.h"

namespace msgq::bench {

void WriteReport(const BenchOptions& options, const pb::BenchResults& results,
                 const std::vector<SeriesPoint>& series);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_
