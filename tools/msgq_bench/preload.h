// Preload: fills a table with ids 1..n and the bench payload, using
// multi-row INSERTs (one autocommitted statement each) spread over several
// connections, each inserting its own contiguous range.
//
// Blocking; uses its own connections.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PRELOAD_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PRELOAD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq::bench {

struct PreloadSpec {
  std::string qualified_table;
  // The payload's column: "message" (msgq) or "payload" (outbox).
  std::string payload_column;
  int64_t rows = 0;
  int connections = 2;
  int rows_per_insert = 1000;
  int payload_bytes = 60;
};

// Returns the seconds it took; the first connection's error otherwise.
absl::StatusOr<double> Preload(const MysqlOptions& mysql,
                               const PreloadSpec& spec);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PRELOAD_H_
