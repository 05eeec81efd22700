-- msgq_inbox: the idempotent-consumer ("inbox") table of a msgq consumer.
--
-- It lives in the CONSUMER's own MySQL/MariaDB database (which may be a
-- different server from msgq's), next to the tables the handler writes.
-- The inbox helpers of the clients (Python msgq.Inbox, Node inboxHandler,
-- Go msgq.Inbox, C++ msgq::Inbox) insert one row per message in the same
-- transaction as the handler's work, before that work, and commit before
-- they ack: a redelivered message whose row is already there is acked
-- without running the handler again. See docs/effectively-once.md.
--
-- The helpers run this statement on first use (CREATE TABLE IF NOT EXISTS,
-- with the table name they were given instead of msgq_inbox) when the user
-- has the CREATE privilege; otherwise an administrator runs it once. At run
-- time the user needs INSERT and SELECT on it, and DELETE for the purge.
--
-- The primary key is the arbiter between consumers: a second transaction
-- inserting the same key waits on the first one's row lock, then gets a
-- duplicate-key error (1062) once the first commits (or succeeds, if the
-- first rolled back). processed_at_idx serves the purge, which deletes rows
-- older than the retention in small batches:
--   DELETE FROM msgq_inbox WHERE processed_at < NOW(6) - INTERVAL ? SECOND
--     ORDER BY processed_at LIMIT 1000      -- repeated until fewer rows go
-- The retention must exceed the longest time a redelivery can come: at
-- least the table's ack wait times its maximum attempts (msgq_max_attempts),
-- or its vt_purge_after, whichever bounds redelivery.
--
-- A row is about 60-330 bytes of key plus 7 of processed_at, twice (the
-- secondary index repeats the primary key).
CREATE TABLE IF NOT EXISTS msgq_inbox (
  source       VARCHAR(64)    NOT NULL,  -- the msgq deployment, chosen by the consumer
  keyspace     VARCHAR(64)    NOT NULL,  -- the message table's database ('' = msgqd's default)
  table_name   VARCHAR(64)    NOT NULL,  -- the message table
  message_id   VARBINARY(255) NOT NULL,  -- the id as streamed (text form)
  processed_at TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (source, keyspace, table_name, message_id),
  KEY processed_at_idx (processed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
