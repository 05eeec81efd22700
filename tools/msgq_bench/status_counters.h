// StatusCounters: a snapshot of the MySQL server's global counters that say
// what a phase cost (statements, rows, fsyncs), and the delta of two
// snapshots. Counters are server-wide: a delta covers everyone's work in the
// interval (msgqd, the bench's producers, relay workers).
//
// Not thread-safe (plain values); Read() uses the caller's connection.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_STATUS_COUNTERS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_STATUS_COUNTERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq::bench {

// The counters snapshotted, in report order.
const std::vector<std::string>& CounterNames();

struct StatusCounters {
  std::map<std::string, int64_t> values;

  // SHOW GLOBAL STATUS for CounterNames(); missing ones read as 0.
  static absl::StatusOr<StatusCounters> Read(MysqlConnection& conn);
  // this - before, per counter.
  StatusCounters Minus(const StatusCounters& before) const;
  int64_t Get(const std::string& name) const;
};

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_STATUS_COUNTERS_H_
