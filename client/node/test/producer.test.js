// @ts-check
'use strict';
// enqueue / enqueueBatch against a private MariaDB, inside the test's own
// mysql2 transactions, and what msgqd streams of them: the column set (ids,
// body, key, type, headers, delay by MySQL's clock, trace context), commit
// and rollback, tables without the trace columns, the errors, and
// enqueueDedup with two producers racing for the same keys.
const test = require('node:test');
const assert = require('node:assert/strict');
const api = require('@opentelemetry/api');
const {
  Env, messageTableDdl, messageComment, eventually, waitForTable,
} = require('../testing/harness');
const {
  Subscriber, Client, MsgqError, status, enqueue, enqueueBatch, enqueueDedup, enqueueDedupBatch,
} = require('..');

const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TRACEPARENT = '00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01';
const TRACED = api.trace.setSpanContext(api.ROOT_CONTEXT, {
  traceId: '0102030405060708090a0b0c0d0e0f10', spanId: '0102030405060708',
  traceFlags: api.TraceFlags.SAMPLED, traceState: api.createTraceState('vendor=x1'),
});

let env;
let conn;

test.before(async () => {
  env = await Env.start();
  await env.sql('CREATE TABLE msgq.outbox (id varchar(36) NOT NULL, priority tinyint NOT NULL DEFAULT 50, ' +
    'epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, ' +
    'message json, message_key varchar(255) DEFAULT NULL, message_type varchar(255) DEFAULT NULL, ' +
    'headers json DEFAULT NULL, traceparent varchar(55) DEFAULT NULL, tracestate varchar(512) DEFAULT NULL, ' +
    'PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) ' +
    `COMMENT '${messageComment({ vt_poller_interval: 0.5 })}'`);
  await env.sql(messageTableDdl('plain'));
  await env.sql(messageTableDdl('halftraced', {}, ['traceparent varchar(55) DEFAULT NULL']));
  conn = await env.connect('msgq');
});

test.after(async () => {
  if (conn) await conn.end().catch(() => {});
  if (env) await env.stop();
});

async function inTx(commit, work) {
  await conn.beginTransaction();
  try {
    return await work();
  } finally {
    if (commit) await conn.commit(); else await conn.rollback();
  }
}

test('enqueue commits with the transaction, and msgqd streams it', async () => {
  const id = await inTx(true, () => enqueue(conn, 'outbox', {
    body: { n: 1 }, key: 'k1', type: 'order.placed', headers: { b: '2', a: '1' },
  }, { context: TRACED }));
  assert.match(id, UUIDV7);
  await inTx(false, () => enqueue(conn, 'outbox', { id: 'rolled-back', body: '{}' }, { context: TRACED }));
  assert.equal(await inTx(true, () => enqueue(conn, 'outbox', { id: 'later', body: '{}', delay: 3600 })),
               'later');
  const batch = await inTx(true, () => enqueueBatch(conn, { keyspace: 'msgq', name: 'outbox' }, [
    { id: 'b1', body: '{}', key: 'kb' },
    { id: 'b2', columns: { priority: 10 } },
    { body: Buffer.from('{"n": 3}') },
  ]));
  assert.equal(batch.length, 3);
  assert.deepEqual(batch.slice(0, 2), ['b1', 'b2']);
  assert.match(batch[2], UUIDV7);

  const rows = await env.sql('SELECT id, priority, time_next, CAST(message AS CHAR), message_key, ' +
    'message_type, CAST(headers AS CHAR), ' +
    "traceparent, tracestate FROM msgq.outbox WHERE id <> 'later' ORDER BY id");
  const want = {
    [id]: [id, 50, '0', '{"n":1}', 'k1', 'order.placed', '{"a":"1","b":"2"}', TRACEPARENT, 'vendor=x1'],
    b1: ['b1', 50, '0', '{}', 'kb', null, null, null, null],
    b2: ['b2', 10, '0', null, null, null, null, null, null],
    [batch[2]]: [batch[2], 50, '0', '{"n": 3}', null, null, null, null, null],
  };
  assert.deepEqual(rows.map((r) => Object.values(r)),
                   [id, 'b1', 'b2', batch[2]].sort().map((k) => want[k]));
  // time_next of the delayed one: an hour after the INSERT by MySQL's clock.
  const [{ ahead }] = await env.sql('SELECT time_next - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED) ' +
    "AS ahead FROM msgq.outbox WHERE id = 'later'");
  const aheadNs = BigInt(ahead);
  assert.ok(aheadNs > 3540n * 1000000000n && aheadNs <= 3600n * 1000000000n, `due in ${aheadNs} ns`);

  // msgqd streams the committed, due messages with their columns.
  const server = await env.msgqd(['--databases=msgq']);
  const client = new Client(server.address);
  await waitForTable(client, 'outbox');
  client.close();
  const received = new Map();
  const sub = new Subscriber({
    servers: server.address, table: 'outbox', tracing: false,
    handler: (msg) => { received.set(msg.id, msg); },
  }).start();
  try {
    await eventually(() => received.size >= 4, { what: '4 received' });
  } finally {
    await sub.close();
  }
  assert.deepEqual([...received.keys()].sort(), [id, 'b1', 'b2', batch[2]].sort());
  const first = received.get(id);
  assert.equal(first.traceContext?.traceparent, TRACEPARENT);
  assert.equal(first.traceContext?.tracestate, 'vendor=x1');
  assert.equal(first.get('message_key'), 'k1');
  assert.deepEqual(first.json('headers'), { a: '1', b: '2' });
});

test('tables without the trace columns, database errors, refused arguments', async () => {
  await inTx(true, async () => {
    assert.equal(await enqueue(conn, { keyspace: 'msgq', name: 'plain' },
                               { id: 7, body: Buffer.from('{"n": 7}') }, { context: TRACED }), '7');
    assert.equal(await enqueue(conn, 'halftraced', { id: 1n, body: {} }, { context: TRACED }), '1');
    // A failed statement leaves the transaction usable.
    await assert.rejects(enqueue(conn, 'plain', { id: 8, body: '{}', key: 'k' }),
                         (e) => e instanceof Error && 'errno' in e && e.errno === 1054 &&
                           /'message_key'/.test(e.message));
    await assert.rejects(enqueue(conn, 'plain', { id: 7, body: '{}' }), (e) => e instanceof Error && 'errno' in e && e.errno === 1062);
  });
  assert.deepEqual((await env.sql('SELECT id, CAST(message AS CHAR), time_next FROM msgq.plain')).map((r) => Object.values(r)),
                   [['7', '{"n": 7}', '0']]);
  assert.deepEqual((await env.sql('SELECT id, traceparent FROM msgq.halftraced')).map((r) => Object.values(r)),
                   [['1', TRACEPARENT]]);

  const refused = [
    [conn, 'a b', { id: 1 }, 'table a b is not a plain name'],
    [conn, 'plain', { id: 1, columns: { 'a`b': 1 } }, 'column a`b is not a plain name'],
    [conn, 'plain', { id: 1, columns: { id: 2 } }, 'column id is a message field, not one of columns'],
    [conn, 'plain', { id: 1, delay: -1 }, 'delay must be a finite number of seconds >= 0, got -1'],
    [conn, 'plain', { id: 1.5 }, 'id 1.5: give a string, Buffer, safe integer or bigint'],
    [conn, 'plain', { id: 1, body: { n: 1n } }, 'body: Do not know how to serialize a BigInt'],
    [conn, 'plain', { id: 1, headers: { a: 1 } }, 'headers must be an object of strings'],
    [null, 'plain', { id: 1 }, 'enqueue needs a mysql2/promise connection'],
  ];
  await inTx(false, async () => {
    for (const [c, table, message, details] of refused) {
      await assert.rejects(enqueue(c, table, message),
                           (e) => e instanceof MsgqError && e.code === status.INVALID_ARGUMENT &&
                             e.details === details, details);
    }
    assert.deepEqual(await enqueueBatch(conn, 'plain', []), []);
  });
  assert.deepEqual(await env.sql('SELECT COUNT(*) AS n FROM msgq.plain'), [{ n: '1' }]);
});

test('enqueueDedup: one row per key, two racing producers, duplicates resolve', async () => {
  await env.sql('CREATE TABLE msgq.once (id varchar(36) NOT NULL, priority tinyint NOT NULL DEFAULT 50, ' +
    'epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, ' +
    'message json, dedup_key varchar(64) DEFAULT NULL, ' +
    'time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000), UNIQUE KEY dedup_key (dedup_key), ' +
    'PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) ' +
    `COMMENT '${messageComment({ msgq_dedup_window: 60 })}'`);
  const first = await inTx(true, () => enqueueDedup(conn, 'once', { body: '{}', dedupKey: 'k0' }));
  assert.equal(first.duplicate, false);
  assert.match(first.id, UUIDV7);
  await inTx(true, async () => {
    assert.deepEqual(await enqueueDedup(conn, 'once', { body: '{}', dedupKey: 'k0' }),
                     { id: first.id, duplicate: true });
    assert.deepEqual((await enqueueDedupBatch(conn, 'once', [{ dedupKey: 'k1' }, { dedupKey: 'k1' }]))
      .map((r) => r.duplicate), [false, true]);
    // The plain form gets MySQL's duplicate-key error, as plain SQL does.
    await assert.rejects(enqueue(conn, 'once', { body: '{}', dedupKey: 'k0' }),
                         (e) => e instanceof Error && 'errno' in e && e.errno === 1062);
    await assert.rejects(enqueueDedup(conn, 'once', { body: '{}' }),
                         (e) => e instanceof MsgqError && e.details === 'message 0 has no dedupKey');
  });

  // Two producers, each key in its own transaction, at once.
  const keys = Array.from({ length: 100 }, (_, i) => `race-${i}`);
  const producers = await Promise.all([env.connect('msgq'), env.connect('msgq')]);
  try {
    const results = await Promise.all(producers.map(async (c, p) => {
      const out = [];
      for (const dedupKey of keys) {
        await c.beginTransaction();
        out.push(await enqueueDedup(c, 'once', { body: { p }, dedupKey }));
        await c.commit();
      }
      return out;
    }));
    const held = new Map((await env.sql("SELECT dedup_key, id FROM msgq.once WHERE dedup_key LIKE 'race-%'"))
      .map((r) => [r.dedup_key, r.id]));
    assert.equal(held.size, keys.length);
    keys.forEach((k, i) => {
      const [a, b] = [results[0][i], results[1][i]];
      assert.deepEqual([a.id, b.id], [held.get(k), held.get(k)], k);
      assert.deepEqual([a.duplicate, b.duplicate].sort(), [false, true], k);
    });
  } finally {
    await Promise.all(producers.map((c) => c.end()));
  }
  assert.deepEqual(await env.sql('SELECT COUNT(*) AS n FROM msgq.once'), [{ n: String(keys.length + 2) }]);
});
