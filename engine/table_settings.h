// TableSettings: the parsed directives of a message table's comment
// ('vitess_message,vt_ack_wait=30,...'). A plain value type.
#ifndef MSGQ_ENGINE_TABLE_SETTINGS_H_
#define MSGQ_ENGINE_TABLE_SETTINGS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace msgq {

struct TableSettings {
  // Wait for the first send to be acked before resending (vt_ack_wait).
  absl::Duration ack_wait;
  // Acked rows older than this are purged (vt_purge_after).
  absl::Duration purge_after;
  // Messages per streamed response (vt_batch_size).
  int batch_size = 0;
  // Messages held queued in memory (vt_cache_size).
  int cache_size = 0;
  // Interval of the safety-net poll and of purging (vt_poller_interval).
  absl::Duration poller_interval;
  // Backoff bounds; min defaults to ack_wait, max to absl::InfiniteDuration().
  absl::Duration min_backoff;
  absl::Duration max_backoff = absl::InfiniteDuration();
  // Streamed columns from vt_message_cols (id first); empty = the default set
  // (every column but priority, time_next, epoch, time_acked, in table order).
  std::vector<std::string> message_cols;
  // After this many sends not acked a message is dead (msgq_max_attempts);
  // 0 = unlimited.
  int max_attempts = 0;
  // A message first enqueued longer ago dies at its next failure
  // (msgq_max_age, needs a time_created column); zero = unlimited.
  absl::Duration max_age;
  // Dead rows are deleted after this long (msgq_dead_retention, needs a
  // time_dead column); zero = kept until redriven or deleted.
  absl::Duration dead_retention;
  // The dedup_key column's unique index holds a key at least this long
  // after its row's time_created: the purge keeps acked and dead rows with a
  // key until then (msgq_dedup_window; needs dedup_key with a unique index
  // of its own and time_created); zero = no dedup window.
  absl::Duration dedup_window;
  // Sends per second for the whole table, redeliveries included
  // (msgq_rate_limit, fractions allowed); 0 = unlimited. At most rate_burst
  // at once (msgq_rate_burst; default max(1, ceil(rate_limit))).
  double rate_limit = 0;
  double rate_burst = 0;
  // Messages with the same value of this column are sent one at a time, in
  // id order (msgq_order_by); empty = no order. See
  // docs/flow-control.md#ordered-delivery-per-key.
  std::string order_by;
  // Within a priority, sends alternate between the values of this column
  // (msgq_fair_by; NULL is one value of its own); empty = plain order. Not
  // combined with order_by. See docs/flow-control.md#fairness-across-tenants.
  std::string fair_by;
  // At most `concurrency` messages with the same value of `concurrency_by`
  // are in flight at once (msgq_concurrency_by, msgq_concurrency; NULL is
  // unlimited); empty / 0 = no limit. Not combined with order_by; with
  // fair_by only on the same column. See
  // docs/flow-control.md#at-most-n-at-once-per-key.
  std::string concurrency_by;
  int concurrency = 0;
  // Tables RANGE-partitioned on time_created only
  // (docs/tables.md#partitioned-tables): the width of the partitions msgqd
  // creates (msgq_partition_interval, whole seconds) and how many whole
  // partitions it keeps ahead of the current one (msgq_partitions_ahead).
  absl::Duration partition_interval = absl::Hours(24);
  int partitions_ahead = 2;

  friend bool operator==(const TableSettings&, const TableSettings&) = default;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_TABLE_SETTINGS_H_
