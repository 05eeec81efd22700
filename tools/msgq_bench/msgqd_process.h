// WaitForTable(s): blocks until an msgqd (the bench's own, started with
// tools/launch/msgqd_process.h, or an external one) has loaded message
// tables. Thread-safe: it shares no state between calls.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_MSGQD_PROCESS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_MSGQD_PROCESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "msgq/v1/messaging.pb.h"

namespace msgq::bench {

// Polls ListTables on `address` until `keyspace`.`table` is loaded.
// DEADLINE_EXCEEDED after `timeout`, with msgqd's error when the table is
// listed but failed to load and stays so.
absl::StatusOr<v1::TableStatus> WaitForTable(const std::string& address,
                                             const std::string& keyspace,
                                             const std::string& table,
                                             absl::Duration timeout);

// The same for every table of `tables` (one ListTables per poll, however
// many tables): their statuses, in the order of `tables`, once all are
// loaded. DEADLINE_EXCEEDED names how many are not and the first of them.
absl::StatusOr<std::vector<v1::TableStatus>> WaitForTables(
    const std::string& address, const std::string& keyspace,
    const std::vector<std::string>& tables, absl::Duration timeout);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_MSGQD_PROCESS_H_
