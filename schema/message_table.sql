-- A msgq message table. Copy it, rename it, add your own columns.
--
-- Required columns: id, priority, epoch, time_next, time_acked (bookkeeping,
-- maintained by msgqd). Times are Unix epoch nanoseconds. Every other column
-- (but time_dead) is streamed to subscribers (or only those named by
-- vt_message_cols). time_created, time_dead and last_error are optional.
-- A dead message (failed msgq_max_attempts times, nacked dead, too large):
--   SELECT id, epoch, last_error FROM demo
--    WHERE time_acked IS NULL AND time_next IS NULL;
--
-- Enqueue inside your own transaction:
--   INSERT INTO demo (id, message) VALUES (1, '{"hello": "world"}');
-- Flow control directives need an index of their own (docs/flow-control.md):
-- msgq_order_by=order_id wants INDEX (order_id, time_acked, id),
-- msgq_fair_by=tenant_id wants
--   INDEX fair_idx (time_acked, tenant_id, priority, time_next).
-- Schedule for later (time_next in ns):
--   INSERT INTO demo (id, message, time_next)
--     VALUES (2, '{}', UNIX_TIMESTAMP(NOW(6) + INTERVAL 1 HOUR) * 1000000000);
CREATE TABLE IF NOT EXISTS demo (
  id bigint NOT NULL COMMENT 'unique message id (event id, auto-increment, ...)',
  priority tinyint NOT NULL DEFAULT 50 COMMENT 'lower is sent first',
  epoch bigint NOT NULL DEFAULT 0 COMMENT 'sends so far; drives backoff',
  -- DEFAULT 0, never NULL for an unacked row: a NULL time_next is never sent.
  time_next bigint DEFAULT 0 COMMENT 'earliest send time, epoch ns; NULL once acked',
  time_acked bigint DEFAULT NULL COMMENT 'ack time, epoch ns; NULL until acked',
  message json,
  -- Optional, used by msgq when present (docs/tables.md#optional-columns):
  time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000)
    COMMENT 'first enqueue, epoch ns (for msgq_max_age)',
  time_dead bigint DEFAULT NULL COMMENT 'when it died, epoch ns; never streamed',
  last_error varchar(1024) DEFAULT NULL COMMENT 'why the last attempt failed',
  PRIMARY KEY (id),
  -- Matches the poll: WHERE time_acked IS NULL AND time_next <= now
  -- ORDER BY priority, time_next, id, so it never needs a filesort.
  INDEX poller_idx (time_acked, priority, time_next),
  -- Lets the purge of dead rows (msgq_dead_retention) read only them.
  INDEX dead_idx (time_dead)
) COMMENT 'vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,vt_cache_size=10000,vt_poller_interval=30,msgq_max_attempts=20';
