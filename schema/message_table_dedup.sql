-- A msgq message table with deduplicated enqueue
-- (docs/tables.md#deduplicated-enqueue): MySQL refuses a second row with
-- the same dedup_key for at least msgq_dedup_window seconds after the
-- first was enqueued (time_created); msgqd's purge deletes the row, and so
-- frees the key, only after that. NULL keys are not deduplicated.
--
-- Enqueue once, retry safely after an unknown commit:
--   INSERT INTO demo_dedup (id, message, dedup_key)
--     VALUES (UUID(), '{"order": 42}', 'order-42-paid');
-- A second INSERT with 'order-42-paid' fails with error 1062 (ER_DUP_ENTRY);
-- the transaction around it goes on. The clients' dedup helpers (C++ and
-- Go EnqueueDedup, Node enqueueDedup, Python enqueue_dedup) report it as a
-- duplicate instead.
CREATE TABLE IF NOT EXISTS demo_dedup (
  id varchar(36) NOT NULL COMMENT 'unique message id (UUIDv7 from the clients)',
  priority tinyint NOT NULL DEFAULT 50 COMMENT 'lower is sent first',
  epoch bigint NOT NULL DEFAULT 0 COMMENT 'sends so far; drives backoff',
  time_next bigint DEFAULT 0 COMMENT 'earliest send time, epoch ns; NULL once acked',
  time_acked bigint DEFAULT NULL COMMENT 'ack time, epoch ns; NULL until acked',
  message json,
  dedup_key varchar(255) DEFAULT NULL COMMENT 'at most one row per key in the window',
  time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000)
    COMMENT 'first enqueue, epoch ns; the dedup window counts from it',
  time_dead bigint DEFAULT NULL COMMENT 'when it died, epoch ns; never streamed',
  last_error varchar(1024) DEFAULT NULL COMMENT 'why the last attempt failed',
  PRIMARY KEY (id),
  -- The dedup_key alone: a unique index on more columns would let the same
  -- key in twice, and msgqd refuses the table without this one.
  UNIQUE KEY dedup_key (dedup_key),
  INDEX poller_idx (time_acked, priority, time_next),
  INDEX dead_idx (time_dead)
) COMMENT 'vitess_message,vt_ack_wait=30,vt_purge_after=3600,vt_batch_size=10,vt_cache_size=10000,vt_poller_interval=30,msgq_max_attempts=20,msgq_dead_retention=604800,msgq_dedup_window=86400';
