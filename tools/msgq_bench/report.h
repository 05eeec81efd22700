// The report of a run. DescribeEnvironment: where it ran (date, host, CPUs,
// memory, kernel, MySQL version and durability settings, msgq commit,
// command line), best effort: what cannot be read is left empty, never an
// error. WriteReport, into options.out_dir: the table (printed and in
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

#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/phases.h"

namespace msgq::bench {

// Uses the caller's `admin` connection.
pb::Environment DescribeEnvironment(const pb::Options& options,
                                    MysqlConnection& admin, int argc,
                                    char** argv);

void WriteReport(const pb::BenchResults& results,
                 const std::vector<SeriesPoint>& series);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_REPORT_H_
