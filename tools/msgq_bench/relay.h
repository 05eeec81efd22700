// The relay baseline: the polling outbox relay of the seeds (002, 004).
// kRelayWorkers workers, each on its own connection at READ COMMITTED, loop:
//   BEGIN; SELECT id, payload ... WHERE processed_at IS NULL ORDER BY id
//   LIMIT kRelayBatch FOR UPDATE SKIP LOCKED; "publish" (read every payload);
//   UPDATE ... SET processed_at = now WHERE id IN (...); COMMIT
// until a SELECT comes back empty. It delivers to no remote consumer and has
// no redelivery: it is the cost floor msgq is compared against.
//
// RunRelay blocks until every worker is done.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_RELAY_H_
#define MSGQ_TOOLS_MSGQ_BENCH_RELAY_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/sql/mysql_connection.h"

namespace msgq::bench {

struct RelayRun {
  int64_t processed = 0;
  int64_t batches = 0;
  int64_t retries = 0;  // transactions rolled back (deadlock, lock wait)
  int64_t start_ns = 0;
  int64_t end_ns = 0;     // the last COMMIT returned
  uint64_t checksum = 0;  // of the payloads "published"
};

// Relays the outbox `qualified_table`; `progress` counts rows committed as
// processed, for sampling. Returns a worker's error when one fails for good
// (after 1000 retries of ABORTED transactions, or at once on other errors).
absl::StatusOr<RelayRun> RunRelay(const MysqlOptions& mysql,
                                  const std::string& qualified_table,
                                  std::atomic<int64_t>* progress);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_RELAY_H_
