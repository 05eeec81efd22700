// ManagerOptions: how a MessageManager runs a table, beyond the table's own
// directives (msgqd's flags set them; MessageManager::Options is an alias).
// A plain value.
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_OPTIONS_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_OPTIONS_H_

#include <cstddef>

#include "absl/time/time.h"

namespace msgq {

struct ManagerOptions {
  // Batches handed to one subscriber and not yet written.
  int max_batches_per_subscriber = 2;
  // Rows deleted per purge statement.
  int purge_batch = 500;
  // Ack requests waiting for their statement; more get RESOURCE_EXHAUSTED.
  int max_pending_acks = 10000;
  // Ids in one MessageAck request.
  int max_ids_per_ack = 100000;
  // Ids in all ack requests waiting for their statement; more get
  // RESOURCE_EXHAUSTED. Bounds memory and the next poll's size.
  int max_pending_ack_ids = 200000;
  // Reads of a binlog-named row that is not visible yet: first delay,
  // doubled per attempt, and the number of attempts.
  absl::Duration refetch_delay = absl::Milliseconds(5);
  int max_refetches = 5;
  // How rows the binlog names are read: true = by primary key (only those
  // rows); false = the event just triggers a poll of the table. Kept to
  // measure the two (docs/benchmarks.md#fetch-by-id-vs-a-triggered-poll).
  bool binlog_fetch_by_id = true;
  // Due rows whose streamed columns the binlog's row image carries in a
  // reproducible text form (RowChange::row) are queued from the image, with
  // no read (--binlog_discovery=image); the others are read as above.
  bool binlog_row_images = false;
  // Non-zero: a manager that replaces another of the same table (a
  // reload) does not know what that one read and sent, so no row image is
  // used before its own first read has a binlog position (RowReconciler
  // rule 6); the length does not matter. Zero: the first manager of the
  // table in its process. Becoming owner waits likewise when the keeper
  // says another instance may have sent the table lately
  // (MessageManager::Own).
  absl::Duration image_wait = absl::Seconds(5);
  // Reconnect backoff after MySQL errors: doubles from min to max.
  absl::Duration retry_min = absl::Milliseconds(100);
  absl::Duration retry_max = absl::Seconds(10);
  // +- this fraction of jitter on each retry delay.
  double retry_jitter = 0.2;
  // Bytes of rows in one streamed batch (Message::WireBytes); a batch
  // always carries at least one message (--max_batch_bytes).
  size_t max_batch_bytes = size_t{1} << 20;
  // A row larger than this is never sent: it dies with a reason giving
  // its size (--max_message_bytes; keep it under the clients' gRPC
  // receive limit, 4 MiB by default).
  size_t max_message_bytes = 4000000;
  // Bytes of rows (Message::WireBytes) one table's cache holds at most,
  // and one read brings at most (--cache_max_bytes): with vt_cache_size,
  // the bound on a table's queued messages whatever their size. A read is
  // sized from the largest row the table's last read brought, and is cut
  // at this many bytes when rows grew (the rest waits for the next read).
  size_t cache_max_bytes = size_t{32} << 20;
  // The longest MessageExtend (--max_extend).
  absl::Duration max_extend = absl::Hours(12);
  // Lines logged for messages that die, per table per minute; the rest
  // are counted in the next line.
  int death_log_lines_per_minute = 10;
  // Several msgqd share the table: the manager starts without ownership
  // and reads and sends only while Own() granted it (engine/lease/).
  // false: it owns the table from the start, for good.
  bool leased = false;
  // With an executor, acks go out on a connection of their own (the engine
  // gives the manager a second store), in rounds that run in parallel with
  // the table's polls and postpones (--ack_lane). Off by default: on a
  // 2-core machine it cost mysqld more CPU per message than it gained
  // (docs/benchmarks.md#the-ack-lane).
  bool ack_lane = false;
  // A sent message's postpone (epoch + 1, time_next = now + its ack wait
  // and backoff) is written this long after the send (at most a tenth of
  // the table's ack wait), unless an ack came first and cancelled it: a
  // message acked within it costs one row update, not two. Owner tables
  // only; stopping or disowning writes every postpone at once. The price:
  // after a crash (kill -9), messages sent in the last grace and not acked
  // are sent again at once by the next msgqd, and redelivery comes up to
  // this much later than the ack wait (--postpone_grace; zero, the
  // default: written in the round after the send). Off by default: in the
  // fault campaign a 200 ms grace made 81 redeliveries inside the ack wait
  // across 30 kills, against 1 without
  // (docs/reliability.md#the-postpone-graces-price).
  absl::Duration postpone_grace = absl::ZeroDuration();
  // A postpone or ack that another transaction's row lock held back
  // (WriteResult::locked) is written again this long after, and so on
  // until it commits (docs/design/locked-rows.md).
  absl::Duration locked_retry = absl::Milliseconds(250);
  // Whether the manager counts the dead rows itself (a read of poller_idx's
  // unacked entries at most once a minute while watched). False when the
  // engine keeps exact counts (engine/queue/message_counts.h) and reports
  // the dead rows from them.
  bool count_dead = true;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_OPTIONS_H_
