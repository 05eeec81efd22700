// ManagerStats: what one MessageManager counted since it started, as
// MessageManager::stats() copies it out (ListTables, /metrics, the console).
// A plain value; not thread-safe by itself (the manager fills it under its
// lock).
#ifndef MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_STATS_H_
#define MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_STATS_H_

#include <cstdint>

#include "engine/queue/manager/message_manager_latency.h"

namespace msgq {

struct ManagerStats {
  int subscribers = 0;
  int64_t queued = 0;
  int64_t in_flight = 0;
  int64_t polls = 0;
  int64_t fetches = 0;  // reads of binlog-named rows by id
  // Binlog-named ids a fetch did not return: not visible yet (the binlog
  // can run ahead of a commit's visibility), or acked or rescheduled
  // meanwhile. Each is read again after the refetch delay.
  int64_t fetch_misses = 0;
  // Due rows queued from their binlog row image, with no read
  // (--binlog_discovery=image).
  int64_t image_rows = 0;
  // Rows the binlog showed due by msgqd's estimate of MySQL's clock whose
  // event did not confirm it (time_next after the event's timestamp): read
  // by a poll once a reading of MySQL's clock confirms them, not sent from
  // the image or fetched at once (docs/design/due-clock.md).
  int64_t due_unconfirmed = 0;
  // Readings of MySQL's clock this manager asked for (DbReadings::Request):
  // due times its estimate reached, to be confirmed before a poll.
  int64_t readings_requested = 0;
  int64_t sent = 0;
  int64_t redelivered = 0;  // sent with epoch > 0 (part of sent)
  int64_t postponed = 0;    // sent rows whose time_next was pushed back
  int64_t acked = 0;        // rows acked by MessageAck
  // Rows the binlog showed going from unacked to acked that this msgqd
  // did not ack: an application's UPDATE (or another msgqd's ack).
  int64_t acked_by_sql = 0;
  // Rows whose postpone or ack another transaction held locked (e.g. an
  // application's SELECT ... FOR UPDATE): each is counted when its first
  // write is held back, once however long and however many writes of it
  // wait; and the rows waiting so now. A nack, extend or redrive of a
  // locked row fails with ABORTED and counts too.
  int64_t locked_rows = 0;
  int64_t locked_rows_waiting = 0;
  int64_t purged = 0;  // acked rows deleted past msgq_purge_after
  // Tables RANGE-partitioned on time_created (purge by partition):
  // partitions created ahead and dropped, and the partitions past
  // vt_purge_after kept at the last step because they hold unacked (or
  // dead, not expired) rows.
  int64_t partitions_created = 0;
  int64_t partitions_dropped = 0;
  int64_t partitions_held_back = 0;
  int64_t nacked = 0;  // rows retried by MessageNack
  int64_t died = 0;    // rows that died (nack, attempts, age, size)
  // Dead rows in MySQL: counted at a purge step at most once a minute
  // while the table has subscribers (or after a dead list was asked
  // for), kept up to date with msgq's own deaths and redrives between;
  // -1 until counted.
  int64_t dead = -1;
  bool mysql_ok = true;
  bool owner = true;    // reads and sends the table now (see Own)
  bool paused = false;  // see SetPaused
  // msgq_concurrency_by: keys with msgq_concurrency messages in flight now.
  int64_t keys_at_limit = 0;
  // Statement latency by kind; a round's write covers postpones, acks,
  // nacks, extends and redrives together.
  StatementLatency poll_latency;
  StatementLatency fetch_latency;
  StatementLatency write_latency;
  StatementLatency purge_latency;
  // From a message's time_next (when it became due) to its handoff to a
  // stream, per message sent with a time_next > 0.
  StatementLatency send_delay;
  // From the binlog showing a row's commit to the row's first handoff to
  // a stream, per message found through the binlog.
  StatementLatency commit_to_send;
};

}  // namespace msgq

#endif  // MSGQ_ENGINE_QUEUE_MANAGER_MANAGER_STATS_H_
