'use strict';
// Inbox: effectively-once processing of messages in the consumer's own
// MySQL/MariaDB database (docs/effectively-once.md), with mysql2/promise.
//
//   const mysql = require('mysql2/promise');
//   const { Subscriber, inboxHandler, ack } = require('msgq');
//   const pool = mysql.createPool({ host: 'billing-db', user: 'billing', database: 'billing' });
//   new Subscriber({
//     servers: 'msgq:15999', table: 'transfers',
//     handler: inboxHandler({ pool, source: 'prod', table: 'transfers' },
//       async (msg, conn) => {              // conn: inside the transaction
//         const t = msg.json('message');
//         await conn.query('UPDATE accounts SET balance = balance - ? WHERE id = ?', [t.amount, t.from]);
//         await conn.query('UPDATE accounts SET balance = balance + ? WHERE id = ?', [t.amount, t.to]);
//         return ack();                     // retry(...) / dead(...) roll back
//       }),
//   }).start();
//
// For each message: a connection from `pool`, BEGIN, INSERT of (source,
// keyspace, table, id) into the inbox table, the work, COMMIT, and only then
// the handler's ack. A duplicate key (processed and committed before, or by
// a concurrent consumer whose row lock this one waited on) acks without
// running the work. A work that throws or answers retry/dead, or a failed
// commit, rolls back (the inbox row too) and answers as the work said (a
// throw or a database error: a retry with the table's backoff). The table is
// created on first use (CREATE TABLE IF NOT EXISTS) when the user may; else
// the error names the missing grant. purgeInbox() deletes rows older than a
// retention in small batches. mysql2 is an optional peer dependency: only
// this module needs it, and only through the pool given.

const { ack, retry, outcome, thrown } = require('./results');

const ER_DUP_ENTRY = 1062;
const ER_NO_SUCH_TABLE = 1146;
const ER_TABLEACCESS_DENIED = 1142;
const ER_DBACCESS_DENIED = 1044;
const NAME = /^[A-Za-z0-9_$]{1,64}$/;

// schema/msgq_inbox.sql with the table name as %s.
const DDL = `CREATE TABLE IF NOT EXISTS \`%s\` (
  source       VARCHAR(64)    NOT NULL,
  keyspace     VARCHAR(64)    NOT NULL,
  table_name   VARCHAR(64)    NOT NULL,
  message_id   VARBINARY(255) NOT NULL,
  processed_at TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (source, keyspace, table_name, message_id),
  KEY processed_at_idx (processed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

class InboxError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'InboxError';
  }
}

function checkName(inboxTable) {
  if (!NAME.test(inboxTable)) throw new RangeError(`inboxTable ${inboxTable} is not a plain table name`);
}

// Makes sure `inboxTable` exists on `conn`, creating it when missing and
// `create`. Throws InboxError naming the grant or statement needed.
async function ensureInboxTable(conn, { inboxTable = 'msgq_inbox', create = true } = {}) {
  checkName(inboxTable);
  try {
    await conn.query(`SELECT 1 FROM \`${inboxTable}\` LIMIT 0`);
    return;
  } catch (err) {
    if (err.errno === ER_TABLEACCESS_DENIED) {
      throw new InboxError(`no access to inbox table ${inboxTable}: GRANT SELECT, INSERT, DELETE ON it ` +
        `to the consumer's user (${err.message})`, err);
    }
    if (err.errno !== ER_NO_SUCH_TABLE) throw err;
    if (!create) {
      throw new InboxError(`inbox table ${inboxTable} does not exist: create it with schema/msgq_inbox.sql`, err);
    }
  }
  try {
    await conn.query(DDL.replace('%s', inboxTable));
  } catch (err) {
    if (err.errno === ER_TABLEACCESS_DENIED || err.errno === ER_DBACCESS_DENIED) {
      throw new InboxError(`inbox table ${inboxTable} does not exist and the user may not create it: ` +
        'GRANT CREATE ON the database to the consumer\'s user, or run schema/msgq_inbox.sql as an ' +
        `administrator (${err.message})`, err);
    }
    throw err;
  }
}

// A Subscriber handler running `work(msg, conn)` with effect once per
// message id. Options: pool (mysql2/promise pool, required), source
// (required), table (the message table, required), keyspace (''),
// inboxTable ('msgq_inbox'), create (true), onCommitted(msg) and
// onDuplicate(msg) hooks, log (a function for failures; console.error).
function inboxHandler(options, work) {
  const {
    pool, source, table, keyspace = '', inboxTable = 'msgq_inbox', create = true,
    onCommitted, onDuplicate, log = (...a) => console.error(...a),
  } = options || {};
  if (!pool || typeof pool.getConnection !== 'function') throw new TypeError('inboxHandler needs a mysql2/promise pool');
  if (typeof source !== 'string' || Buffer.byteLength(source) > 64) {
    throw new TypeError('inboxHandler needs a source of at most 64 bytes');
  }
  if (typeof table !== 'string' || table === '') throw new TypeError('inboxHandler needs the message table');
  if (typeof work !== 'function') throw new TypeError('inboxHandler needs a work function');
  checkName(inboxTable);
  let ready = false;
  const insert = `INSERT INTO \`${inboxTable}\` (source, keyspace, table_name, message_id) VALUES (?, ?, ?, ?)`;

  return async function inboxHandle(msg) {
    let conn;
    try {
      conn = await pool.getConnection();
      if (!ready) {
        await ensureInboxTable(conn, { inboxTable, create });
        ready = true;
      }
    } catch (err) {
      if (conn) conn.destroy();
      log(`msgq inbox: ${err.message}`);
      return thrown(err);
    }
    let broken = false;
    const rollback = async () => {
      try {
        await conn.rollback();
      } catch {
        broken = true;
      }
    };
    try {
      await conn.beginTransaction();
      try {
        await conn.query(insert, [source, keyspace, table, msg.idBytes]);
      } catch (err) {
        await rollback();
        if (err.errno === ER_DUP_ENTRY) {
          if (onDuplicate) onDuplicate(msg);
          return ack();
        }
        throw err;
      }
      let result;
      try {
        result = outcome(await work(msg, conn));
      } catch (err) {
        await rollback();
        log(`msgq inbox: handler failed: ${err && err.message}`);
        return thrown(err);
      }
      if (result.kind !== 'ack') {
        await rollback();
        return result;
      }
      await conn.commit();
    } catch (err) { // the database failed: INSERT, BEGIN or COMMIT
      await rollback();
      broken = broken || !err.errno || err.fatal === true;
      log(`msgq inbox: ${err.message}`);
      return retry({ reason: `inbox: ${err.message}` });
    } finally {
      if (broken) conn.destroy(); else conn.release();
    }
    if (onCommitted) onCommitted(msg);
    return ack();
  };
}

// Deletes inbox rows processed more than `retentionSeconds` ago (by the
// database's clock), `batch` rows per statement, until none is left;
// resolves to the number deleted. The retention must exceed the longest
// redelivery (docs/effectively-once.md).
async function purgeInbox(pool, { retentionSeconds, batch = 1000, inboxTable = 'msgq_inbox' } = {}) {
  checkName(inboxTable);
  if (!(retentionSeconds > 0)) throw new RangeError(`retentionSeconds must be positive, got ${retentionSeconds}`);
  if (!(Number.isInteger(batch) && batch > 0)) throw new RangeError(`batch must be a positive integer, got ${batch}`);
  const micros = Math.round(retentionSeconds * 1e6);
  let deleted = 0;
  for (;;) {
    const [res] = await pool.query(
      `DELETE FROM \`${inboxTable}\` WHERE processed_at < NOW(6) - INTERVAL ${micros} MICROSECOND ` +
      `ORDER BY processed_at LIMIT ${batch}`);
    deleted += res.affectedRows;
    if (res.affectedRows < batch) return deleted;
  }
}

module.exports = { inboxHandler, purgeInbox, ensureInboxTable, InboxError, DDL };
