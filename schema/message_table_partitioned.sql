-- A msgq message table RANGE-partitioned on time_created: acked rows are
-- purged by dropping whole partitions (ALTER TABLE ... DROP PARTITION, no
-- row-by-row DELETE). Columns and comment as in message_table.sql; see
-- docs/tables.md#partitioned-tables.
--
-- What msgqd does with it (only the instance that owns the table, at each
-- purge step, every vt_poller_interval):
--  - keeps partitions ahead: bounds on a grid of msgq_partition_interval
--    seconds (default 86400, one day; a whole number of seconds), the one
--    holding now plus msgq_partitions_ahead more (default 2). pmax, the
--    MAXVALUE catch-all below, stays last and is split (REORGANIZE
--    PARTITION); keep it, so an INSERT never fails for want of a partition.
--    msgqd names its partitions p<UTC yyyymmddhhmmss of the upper bound>.
--  - drops a partition whose upper bound is at least vt_purge_after old once
--    every row in it is acked since before then (or dead past
--    msgq_dead_retention); one with an unacked row is kept and reported
--    (metric msgq_partitions_held_back, one log line).
--
-- MariaDB wants the partitioning column in every unique key, hence
-- PRIMARY KEY (id, time_created): MySQL no longer enforces unique ids on
-- its own, so give ids that are unique anyway (AUTO_INCREMENT, an event id).
-- Lookups by id (acks, fetches of binlog-named rows) still use the primary
-- key, one index dive per partition; keep tens of partitions, not thousands.
-- time_created must be NOT NULL and set at enqueue (the default does it):
-- a row enters the partition of its enqueue time. Never INSERT with an
-- explicit time_created older than vt_purge_after (the row could land in a
-- partition being dropped).
--
-- Starting with pmax alone is fine: the first purge step splits it.
CREATE TABLE IF NOT EXISTS demo (
  id bigint NOT NULL AUTO_INCREMENT COMMENT 'unique message id',
  priority tinyint NOT NULL DEFAULT 50 COMMENT 'lower is sent first',
  epoch bigint NOT NULL DEFAULT 0 COMMENT 'sends so far; drives backoff',
  time_next bigint DEFAULT 0 COMMENT 'earliest send time, epoch ns; NULL once acked',
  time_acked bigint DEFAULT NULL COMMENT 'ack time, epoch ns; NULL until acked',
  message json,
  time_created bigint NOT NULL DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000)
    COMMENT 'first enqueue, epoch ns: picks the partition',
  time_dead bigint DEFAULT NULL COMMENT 'when it died, epoch ns; never streamed',
  last_error varchar(1024) DEFAULT NULL COMMENT 'why the last attempt failed',
  PRIMARY KEY (id, time_created),
  -- id is named here (the plain table gets it implicitly from its primary
  -- key): a partitioned table's index does not order by the primary key's
  -- columns, and without it the poll's ORDER BY priority, time_next, id
  -- sorts every due row (EXPLAIN: Using filesort).
  INDEX poller_idx (time_acked, priority, time_next, id),
  INDEX dead_idx (time_dead)
) COMMENT 'vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,vt_cache_size=10000,vt_poller_interval=30,msgq_max_attempts=20,msgq_partition_interval=86400,msgq_partitions_ahead=2'
PARTITION BY RANGE (time_created) (
  PARTITION pmax VALUES LESS THAN MAXVALUE
);
