// @ts-check
'use strict';
// The Subscriber as an async iterable and with an AbortSignal, against a
// real MariaDB and msgqd: the loop acks what it moves past, settle() retries
// and kills, leaving the loop retries what it held and closes; an abort
// drains running handlers and flushes their acks, also mid-loop; an aborted
// signal opens nothing; a fatal error is thrown by the loop.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  Env, messageTableDdl, eventually, waitForTable, sleep,
} = require('../testing/harness');
const { Subscriber, Client, ack, retry, dead, status, MsgqError } = require('..');

let env;
let server;
let client;
const subscribers = []; // closed in after(), also when a test failed

const TABLES = {
  looped: messageTableDdl('looped'),
  left: messageTableDdl('left', { vt_min_backoff: 1, vt_max_backoff: 1 }),
  aborted: messageTableDdl('aborted'),
  abortloop: messageTableDdl('abortloop'),
};

test.before(async () => {
  env = await Env.start();
  for (const ddl of Object.values(TABLES)) await env.sql(ddl);
  server = await env.msgqd(['--databases=msgq']);
  client = new Client(server.address);
  for (const name of Object.keys(TABLES)) await waitForTable(client, name);
});

test.after(async () => {
  await Promise.all(subscribers.map((s) => s.close().catch(() => {})));
  if (client) client.close();
  if (env) await env.stop();
});

async function insert(table, ids) {
  for (const id of ids) {
    await env.sql(`INSERT INTO msgq.\`${table}\` (id, message) VALUES (?, ?)`,
                  [id, JSON.stringify({ n: id })]);
  }
}

async function rows(table) {
  return env.sql(`SELECT id, epoch, time_acked IS NOT NULL AS acked, time_dead IS NOT NULL AS dead,
                  last_error FROM msgq.\`${table}\` ORDER BY id`);
}

async function ackedIds(table) {
  return (await rows(table)).filter((r) => Number(r.acked) === 1).map((r) => Number(r.id));
}

// A subscriber closed after the test, and after 30 s so that a loop cannot
// outlive a failed test.
function subscriber(table, options = {}) {
  const sub = new Subscriber({ servers: server.address, table, keyspace: 'msgq', ...options });
  subscribers.push(sub);
  setTimeout(() => sub.close(), 30000).unref();
  return sub;
}

const LIMIT = { timeout: 60000 };

test('for await: the loop acks what it moves past, settle() retries and kills', LIMIT, async () => {
  await insert('looped', [1, 2, 3]);
  const controller = new AbortController();
  const sub = subscriber('looped', { signal: controller.signal });
  const seen = [];
  let settleTwice = null;
  for await (const msg of sub) {
    seen.push(`${msg.id}:${msg.epoch}`);
    if (msg.id === '2') {
      sub.settle(msg, dead('bad two'));
      try {
        sub.settle(msg, ack());
      } catch (e) {
        settleTwice = e;
      }
    } else if (msg.id === '3' && msg.epoch === 0) {
      sub.settle(msg, retry({ delay: 0, reason: 'again' }));
    }
    if (seen.length === 4) controller.abort(); // this one is acked as the loop ends
  }
  await sub.wait();
  assert.deepEqual(seen.slice().sort(), ['1:0', '2:0', '3:0', '3:1']);
  assert.ok(settleTwice instanceof MsgqError);
  assert.equal(settleTwice.code, status.FAILED_PRECONDITION);
  assert.deepEqual((await rows('looped')).map((r) => [
    Number(r.id), Number(r.acked), Number(r.dead), r.last_error,
  ]), [[1, 1, 0, null], [2, 0, 1, 'bad two'], [3, 1, 0, 'again']]);
  const stats = sub.stats();
  assert.equal(stats.handled, 2);
  assert.equal(stats.failed, 2);
  assert.equal(stats.acked, 2);
  assert.equal(stats.dead, 1);
  assert.equal(stats.retried, 1);
  assert.throws(() => sub[Symbol.asyncIterator](),
                (e) => e instanceof MsgqError && e.code === status.FAILED_PRECONDITION);
});

test('leaving the loop retries its unsettled message with the backoff and closes', LIMIT, async () => {
  await insert('left', [1]);
  const first = subscriber('left');
  let held = null;
  for await (const msg of first) {
    held = msg;
    break;
  }
  await first.wait(); // closed by the break
  assert.equal(held.id, '1');
  assert.equal(held.epoch, 0);
  const [row] = await rows('left');
  assert.equal(Number(row.acked), 0);
  assert.equal(row.last_error, 'the loop ended before settling it');
  const left = Date.now();
  const second = subscriber('left');
  let again = null;
  for await (const msg of second) {
    again = { epoch: msg.epoch, after: Date.now() - left };
    second.settle(msg, ack());
    break;
  }
  await second.wait();
  assert.equal(again.epoch, 1);
  // vt_min_backoff = vt_max_backoff = 1 s (the ack wait is 30 s).
  assert.ok(again.after >= 700 && again.after < 5000, `redelivered after ${again.after} ms`);
  assert.deepEqual(await ackedIds('left'), [1]);
});

test('abort: stops taking messages, drains running handlers, flushes their acks', LIMIT, async () => {
  await insert('aborted', [1, 2, 3, 4, 5, 6]);
  const controller = new AbortController();
  const started = [];
  const finished = [];
  const sub = subscriber('aborted', {
    signal: controller.signal, concurrency: 2, ack: { maxDelay: 10 }, // acks only on close
    handler: async (msg) => {
      started.push(msg.id);
      await sleep(700);
      finished.push(msg.id);
      return ack();
    },
  }).start();
  await eventually(() => started.length === 2, { what: '2 started' });
  controller.abort();
  const t0 = Date.now();
  await sub.wait(); // resolves: an abort is a clean stop
  assert.ok(Date.now() - t0 >= 400, 'the running handlers were waited for');
  assert.equal(started.length, 2, 'nothing started after the abort');
  assert.deepEqual(finished.slice().sort(), started.slice().sort());
  assert.deepEqual((await ackedIds('aborted')).map(String), started.slice().sort());
  // The others were handed back at once (the ack wait is 30 s).
  const rest = [];
  const next = subscriber('aborted', { handler: (msg) => { rest.push(msg.id); } }).start();
  await eventually(async () => (await ackedIds('aborted')).length === 6,
                   { what: 'the rest acked', timeoutMs: 10000 });
  await next.close();
  assert.equal(rest.length, 4);
});

test('abort during a loop: the body finishes, its message is acked, the loop ends', LIMIT, async () => {
  await insert('abortloop', [1, 2, 3]);
  const controller = new AbortController();
  const sub = subscriber('abortloop', { signal: controller.signal });
  const bodies = [];
  for await (const msg of sub) {
    controller.abort();
    await sleep(300); // the subscriber waits for the body
    bodies.push(msg.id);
  }
  assert.equal(bodies.length, 1);
  await sub.wait();
  assert.deepEqual((await ackedIds('abortloop')).map(String), bodies);
  const rest = [];
  const next = subscriber('abortloop', { handler: (msg) => { rest.push(msg.id); } }).start();
  await eventually(async () => (await ackedIds('abortloop')).length === 3,
                   { what: 'the rest acked', timeoutMs: 10000 });
  await next.close();
  assert.deepEqual(rest.sort(), ['1', '2', '3'].filter((id) => id !== bodies[0]));
});

test('an aborted signal opens nothing; a fatal error is thrown by the loop', LIMIT, async () => {
  const idle = subscriber('looped', { signal: AbortSignal.abort() });
  let iterations = 0;
  for await (const msg of idle) iterations += msg ? 1 : 0;
  assert.equal(iterations, 0);
  await idle.wait();
  assert.equal(idle.stats().streamsStarted, 0);
  const missing = subscriber('no_such_table');
  await assert.rejects(async () => {
    for await (const msg of missing) missing.settle(msg);
  }, (e) => e instanceof MsgqError && e.code === status.NOT_FOUND);
});
