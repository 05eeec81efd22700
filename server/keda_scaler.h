// KedaScaler: what msgqd's KEDA external scaler (keda_scaler_service.h)
// answers for a table, from the ScaledObject trigger's metadata and the
// table's exact counts (engine/queue/message_counts.h). Pure functions.
//
// Metadata keys (values are strings, as KEDA passes them; other keys, such
// as KEDA's own scalerAddress, are ignored):
//   table                     the message table (required);
//   keyspace                  its database; empty or absent: the first of
//                             --databases that has it;
//   targetMessagesPerReplica  the HPA's target per replica (default 10,
//                             an integer >= 1);
//   activationMessages        active only when the metric is above it
//                             (default 0, an integer >= 0);
//   ageSeconds                the age term's step (default 0: no age term,
//                             an integer >= 0).
//
// The metric is ready + in_flight + an age term: one more replica's worth
// (targetMessagesPerReplica) for each whole ageSeconds that the oldest
// ready message (msgq_oldest_ready_age_seconds) has waited past its
// time_next. Scheduled (not yet due) and dead rows do not count. The table
// is active when the metric is above activationMessages.
//
// Example:
//   absl::StatusOr<KedaTrigger> trigger = ParseKedaTrigger(metadata);
//   int64_t value = KedaMetricValue(*trigger, counts);
//   bool active = value > trigger->activation_messages;
//
// Design: docs/operations.md#autoscaling-with-keda.
#ifndef MSGQ_SERVER_KEDA_SCALER_H_
#define MSGQ_SERVER_KEDA_SCALER_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/queue/message_counts.h"

namespace msgq {

struct KedaTrigger {
  std::string keyspace;  // "": search --databases
  std::string table;
  int64_t target_messages_per_replica = 10;
  int64_t activation_messages = 0;
  int64_t age_seconds = 0;  // 0: no age term
};

// The trigger of `metadata` (the keys above). INVALID_ARGUMENT naming the
// key: `table` missing or empty, or a number that is not a decimal integer
// in its range.
absl::StatusOr<KedaTrigger> ParseKedaTrigger(
    const std::map<std::string, std::string>& metadata);

// The metric's value for `trigger` at `counts` (see the header comment);
// saturates at INT64_MAX.
int64_t KedaMetricValue(const KedaTrigger& trigger,
                        const MessageCounts::Counts& counts);

// Whether `trigger`'s workload should run: KedaMetricValue above
// activation_messages.
bool KedaActive(const KedaTrigger& trigger,
                const MessageCounts::Counts& counts);

// "msgq-KEYSPACE-TABLE": the metric's name for the table `keyspace`.`table`.
std::string KedaMetricName(absl::string_view keyspace, absl::string_view table);

}  // namespace msgq

#endif  // MSGQ_SERVER_KEDA_SCALER_H_
