'use strict';
// The producer side: enqueue messages with an INSERT on the application's
// own mysql2/promise connection, inside its transaction, so that a message
// exists if and only if the transaction that made it commits.
//
//   await conn.beginTransaction();
//   await conn.query('INSERT INTO orders (id, total) VALUES (?, ?)', [orderId, total]);
//   const id = await enqueue(conn, 'order_events', {
//     body: { orderId, total },      // JSON-encoded
//     key: customerId,               // message_key
//     type: 'order.placed',          // message_type
//     headers: { source: 'web' },    // headers, a JSON object
//     delay: 10,                     // seconds: time_next = NOW(6) + 10 s
//   });
//   await conn.commit();
//
// The row, as the Go client's Enqueue writes it (plain SQL fills the same
// columns the same way): `id` = message.id, or a new UUIDv7 in its
// 36-character text form (for a char(36)/varchar(36) id; a table with an
// integer id must give one); `message` = body (a Buffer or string as it is,
// null/undefined as NULL, anything else JSON.stringify'd); `time_next` = 0
// (send now) or CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED) + the
// delay in nanoseconds (MySQL's clock); `traceparent` and `tracestate` = the
// OpenTelemetry context's (options.context, default the active one; see
// trace.js) when there is a valid span, each only when the table has the
// column; `message_key`, `message_type`, `headers` only when key, type or
// headers are given (the table needs the column then; headers sorted by
// name); `columns` as given.
// `dedup_key` = dedupKey when given.
// Columns not written take their defaults. Without trace columns in the
// table, a traced context costs a second INSERT: MySQL refuses the first
// with ER_BAD_FIELD_ERROR, which leaves the transaction as it was.
//
// Deduplicated enqueue (docs/tables.md#deduplicated-enqueue), on a table
// with msgq_dedup_window and a unique dedup_key:
//   const { id, duplicate } = await enqueueDedup(conn, 'payments',
//     { body: { order: 42 }, dedupKey: 'order-42-paid' });
// enqueueDedup/enqueueDedupBatch write INSERT ... ON DUPLICATE KEY UPDATE
// id = id, then read who holds each key (SELECT ... LOCK IN SHARE MODE): a
// message whose key a row already holds (committed, or committed by a racing
// producer while this INSERT waited for it) is not inserted and comes back
// as { id: that row's id, duplicate: true }. Every message needs a dedupKey.
// enqueue/enqueueBatch given a dedupKey write it too, and a duplicate gets
// mysql2's error errno 1062 like plain SQL.

const crypto = require('node:crypto');
const { invalidArgument } = require('./errors');
const { tableRef, tableString } = require('./wire');
const { traceColumns } = require('./trace');

const KEY_COLUMN = 'message_key';
const TYPE_COLUMN = 'message_type';
const HEADERS_COLUMN = 'headers';
const DEDUP_COLUMN = 'dedup_key';
const ER_DUP_ENTRY = 1062;
const ER_BAD_FIELD_ERROR = 1054;
const NAME = /^[A-Za-z0-9_$]{1,64}$/;
const OWN_COLUMNS = new Set(['id', 'message', 'time_next', KEY_COLUMN, TYPE_COLUMN, HEADERS_COLUMN,
  DEDUP_COLUMN]);
const NOW_NS = 'CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)';

// A new UUID version 7 (RFC 9562) in its 36-character text form: 48 bits of
// Unix milliseconds, then random bits, so later ids sort later (to the
// millisecond) and new rows go to the end of the primary key.
function uuidv7(nowMs = Date.now(), random = crypto.randomBytes(10)) {
  const u = Buffer.alloc(16);
  u.writeUIntBE(nowMs, 0, 6);
  random.copy(u, 6, 0, 10);
  u[6] = 0x70 | (u[6] & 0x0f); // version 7
  u[8] = 0x80 | (u[8] & 0x3f); // variant 10
  const h = u.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function idText(id) {
  if (typeof id === 'string') return id;
  if (Buffer.isBuffer(id)) return id.toString('utf8');
  if (typeof id === 'bigint' || Number.isSafeInteger(id)) return String(id);
  throw invalidArgument(`id ${String(id)}: give a string, Buffer, safe integer or bigint`);
}

function bodyValue(body) {
  if (body === null || body === undefined) return null;
  if (typeof body === 'string' || Buffer.isBuffer(body)) return body;
  let json;
  try {
    json = JSON.stringify(body);
  } catch (e) {
    throw invalidArgument(`body: ${e.message}`);
  }
  if (json === undefined) throw invalidArgument(`body: ${typeof body} has no JSON form`);
  return json;
}

// A value for the INSERT: { value } for a placeholder, { sql } for an
// expression of ours.
function row(message) {
  if (!message || typeof message !== 'object') throw invalidArgument('a message is an object');
  const { id = uuidv7(), body, key, type, headers, delay = 0, columns = {}, dedupKey } = message;
  const out = new Map();
  for (const [name, value] of Object.entries(columns)) {
    if (!NAME.test(name)) throw invalidArgument(`column ${name} is not a plain name`);
    if (OWN_COLUMNS.has(name)) throw invalidArgument(`column ${name} is a message field, not one of columns`);
    out.set(name, { value });
  }
  const text = idText(id);
  out.set('id', { value: id });
  out.set('message', { value: bodyValue(body) });
  if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
    throw invalidArgument(`delay must be a finite number of seconds >= 0, got ${delay}`);
  }
  const ns = BigInt(Math.round(delay * 1e9));
  out.set('time_next', ns === 0n ? { value: 0 } : { sql: `${NOW_NS} + ${ns}` });
  if (key !== undefined) out.set(KEY_COLUMN, { value: String(key) });
  if (type !== undefined) out.set(TYPE_COLUMN, { value: String(type) });
  if (dedupKey !== undefined) out.set(DEDUP_COLUMN, { value: String(dedupKey) });
  if (headers !== undefined) {
    if (!headers || typeof headers !== 'object' || Array.isArray(headers) ||
        !Object.values(headers).every((v) => typeof v === 'string')) {
      throw invalidArgument('headers must be an object of strings');
    }
    out.set(HEADERS_COLUMN, { value: JSON.stringify(Object.fromEntries(Object.entries(headers).sort())) });
  }
  return { columns: out, id: text };
}

// Rows with the trace context columns added where `columns` did not give
// them (tracestate only when set).
function withTrace(rows, traceparent, tracestate) {
  return rows.map((r) => {
    const traced = new Map(r);
    if (!traced.has('traceparent')) {
      traced.set('traceparent', { value: traceparent });
      if (!traced.has('tracestate') && tracestate) traced.set('tracestate', { value: tracestate });
    }
    return traced;
  });
}

function isUnknownColumn(err, column) {
  return err && err.errno === ER_BAD_FIELD_ERROR && String(err.message).includes(`'${column}'`);
}

// One INSERT of `rows`; a column missing from a row is DEFAULT there.
function quotedTable(ref) {
  return (ref.keyspace ? `\`${ref.keyspace}\`.` : '') + `\`${ref.name}\``;
}

async function insertRows(conn, ref, rows, suffix) {
  const columns = [...new Set(rows.flatMap((r) => [...r.keys()]))].sort();
  const values = [];
  const tuples = rows.map((r) => `(${columns.map((c) => {
    const v = r.get(c);
    if (v === undefined) return 'DEFAULT';
    if (v.sql !== undefined) return v.sql;
    values.push(v.value);
    return '?';
  }).join(', ')})`);
  await conn.query(`INSERT INTO ${quotedTable(ref)} (${columns.map((c) => `\`${c}\``).join(', ')}) ` +
                   `VALUES ${tuples.join(', ')}${suffix}`, values);
}

// One INSERT of `rows` with the context's trace columns, or without them
// when the table has none; `suffix` follows the VALUES.
async function insertTraced(conn, ref, rows, context, suffix) {
  const { traceparent, tracestate } = traceColumns(context);
  if (traceparent) {
    try {
      await insertRows(conn, ref, withTrace(rows, traceparent, tracestate), suffix);
      return;
    } catch (err) {
      if (tracestate && isUnknownColumn(err, 'tracestate')) {
        try {
          await insertRows(conn, ref, withTrace(rows, traceparent, null), suffix);
          return;
        } catch (again) {
          if (!isUnknownColumn(again, 'traceparent')) throw again;
        }
      } else if (!isUnknownColumn(err, 'traceparent')) {
        throw err;
      }
      // The table has no trace context columns: enqueue without.
    }
  }
  await insertRows(conn, ref, rows, suffix);
}

function checkedRef(conn, table) {
  if (!conn || typeof conn.query !== 'function') {
    throw invalidArgument('enqueue needs a mysql2/promise connection');
  }
  const ref = tableRef(table);
  if (!NAME.test(ref.name) || (ref.keyspace !== '' && !NAME.test(ref.keyspace))) {
    throw invalidArgument(`table ${tableString(ref)} is not a plain name`);
  }
  return ref;
}

// Inserts `messages` into `table` on `conn` (a mysql2/promise Connection or
// PoolConnection, inside the caller's transaction) with one multi-row
// INSERT; resolves to their ids in text form (what a subscriber's msg.id
// shows). options.context: the OpenTelemetry context whose span goes to the
// trace columns (default: the active context). Rejects with a MsgqError
// (INVALID_ARGUMENT) for a bad argument before any statement, else with
// mysql2's error (e.g. errno 1062 for a duplicate id, 1054 for `key` on a
// table without message_key). No messages: nothing is inserted.
async function enqueueBatch(conn, table, messages, options = {}) {
  const ref = checkedRef(conn, table);
  if (!Array.isArray(messages)) throw invalidArgument('enqueueBatch takes an array of messages');
  if (messages.length === 0) return [];
  const built = messages.map(row);
  await insertTraced(conn, ref, built.map((b) => b.columns), options.context, '');
  return built.map((b) => b.id);
}

function text(v) {
  return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
}

// Inserts the messages whose dedupKey no row holds, with one INSERT ... ON
// DUPLICATE KEY UPDATE id = id inside the caller's transaction; resolves to
// one { id, duplicate } per message: the id of the row holding its key, and
// whether that row was there before (nothing inserted). Two messages of the
// batch with one key: the second is a duplicate of the first. Rejects with
// a MsgqError (INVALID_ARGUMENT) when a message has no dedupKey; with an
// Error of errno 1062 when a message's id is taken by a row with another
// key; else as enqueueBatch.
async function enqueueDedupBatch(conn, table, messages, options = {}) {
  const ref = checkedRef(conn, table);
  if (!Array.isArray(messages)) throw invalidArgument('enqueueDedupBatch takes an array of messages');
  if (messages.length === 0) return [];
  const built = messages.map(row);
  const keys = messages.map((m, i) => {
    if (m.dedupKey === undefined || m.dedupKey === null || m.dedupKey === '') {
      throw invalidArgument(`message ${i} has no dedupKey`);
    }
    return String(m.dedupKey);
  });
  await insertTraced(conn, ref, built.map((b) => b.columns), options.context,
                     ' ON DUPLICATE KEY UPDATE `id` = `id`');
  const wanted = [...new Set(keys)];
  // A locking read sees the latest committed rows, whatever the snapshot.
  const [found] = await conn.query(
    `SELECT \`${DEDUP_COLUMN}\` AS k, \`id\` AS id FROM ${quotedTable(ref)} ` +
    `WHERE \`${DEDUP_COLUMN}\` IN (${wanted.map(() => '?').join(', ')}) LOCK IN SHARE MODE`, wanted);
  const holders = new Map(found.map((r) => [text(r.k), text(r.id)]));
  return keys.map((key, i) => {
    const holder = holders.get(key);
    if (holder === undefined) {
      const err = new Error(`id ${built[i].id} is taken by a row without dedup key ${key}: nothing was inserted for it`);
      err.errno = ER_DUP_ENTRY;
      throw err;
    }
    return { id: holder, duplicate: holder !== built[i].id };
  });
}

// enqueueDedupBatch of one message; resolves to its { id, duplicate }.
async function enqueueDedup(conn, table, message, options) {
  const [result] = await enqueueDedupBatch(conn, table, [message], options);
  return result;
}

// enqueueBatch of one message; resolves to its id.
async function enqueue(conn, table, message, options) {
  const [id] = await enqueueBatch(conn, table, [message], options);
  return id;
}

module.exports = { enqueue, enqueueBatch, enqueueDedup, enqueueDedupBatch, uuidv7 };
