// DescribeEnvironment: where a bench run ran (date, host, CPUs, memory,
// kernel, MySQL version and durability settings, msgq commit, command line),
// for the report. Best effort: what cannot be read is left empty, never an
// error. Uses the caller's `admin` connection; not thread-safe.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_ENVIRONMENT_H_
#define MSGQ_TOOLS_MSGQ_BENCH_ENVIRONMENT_H_

#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/bench_results.pb.h"
#include "tools/msgq_bench/options.h"

namespace msgq::bench {

pb::Environment DescribeEnvironment(const BenchOptions& options,
                                    MysqlConnection& admin, int argc,
                                    char** argv);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_ENVIRONMENT_H_
