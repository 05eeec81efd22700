'use strict';
// Unit tests without a server: row decoding and typing, handler results,
// backoff, the ack batcher and heartbeat with fake calls, trace context
// parsing, the bytes conversion and errors.
const test = require('node:test');
const assert = require('node:assert/strict');
const msgq = require('..');
const { Message, Schema } = require('../lib/message');
const { AckBatcher } = require('../lib/ack_batcher');
const { Heartbeat } = require('../lib/heartbeat');
const { Backoff } = require('../lib/backoff');
const { findProtoDir } = require('../lib/proto');
const { uuidv7 } = require('../lib/producer');
const { bytes, tableRef } = require('../lib/wire');
const { MsgqError, status } = msgq;

function row(values, epoch = 0) {
  const lengths = values.map((v) => (v === null ? '-1' : String(Buffer.byteLength(v))));
  const buf = Buffer.concat(values.filter((v) => v !== null).map((v) => Buffer.from(v)));
  return { lengths, values: buf, epoch: String(epoch) };
}

test('decodes and types a row by field type', () => {
  const schema = new Schema([
    { name: 'id', type: 'bigint' }, { name: 'n', type: 'int' },
    { name: 'big', type: 'bigint' }, { name: 'f', type: 'double' },
    { name: 'd', type: 'decimal' }, { name: 's', type: 'varchar' },
    { name: 'b', type: 'varbinary' }, { name: 'j', type: 'json' },
    { name: 'nul', type: 'text' }, { name: 'small', type: 'bigint' },
  ]);
  const m = new Message(schema, row([
    '17', '-5', '9007199254740993', '2.5', '10.10', 'héllo', '\x00\x01',
    '{"a":1}', null, '42',
  ], 3), 'srv');
  assert.equal(m.id, '17');
  assert.equal(m.epoch, 3);
  assert.equal(m.server, 'srv');
  assert.deepEqual(m.delivery, { id: '17', epoch: 3 });
  assert.equal(m.get('n'), -5);
  assert.equal(m.get('big'), 9007199254740993n);
  assert.equal(m.get('small'), 42);
  assert.equal(m.get('f'), 2.5);
  assert.equal(m.get('d'), '10.10');
  assert.equal(m.get('s'), 'héllo');
  assert.deepEqual(m.get('b'), Buffer.from([0, 1]));
  assert.equal(m.get('j'), '{"a":1}');
  assert.deepEqual(m.json('j'), { a: 1 });
  assert.equal(m.get('nul'), null);
  assert.equal(m.raw('nul'), null);
  assert.equal(m.get('nope'), undefined);
  assert.equal(m.traceContext, null);
  assert.ok(Object.isFrozen(m));
});

test('rejects malformed rows as INTERNAL', () => {
  const schema = new Schema([{ name: 'id', type: 'bigint' }, { name: 'm', type: 'json' }]);
  const bad = [
    { lengths: ['1'], values: Buffer.from('1'), epoch: '0' },
    { lengths: ['1', '-2'], values: Buffer.from('1'), epoch: '0' },
    { lengths: ['1', '5'], values: Buffer.from('1ab'), epoch: '0' },
    { lengths: ['1', '1'], values: Buffer.from('1abc'), epoch: '0' },
    { lengths: ['-1', '1'], values: Buffer.from('a'), epoch: '0' },
    { lengths: ['1', '1'], values: Buffer.from('1a'), epoch: '-1' },
  ];
  for (const r of bad) {
    assert.throws(() => new Message(schema, r), (e) => e instanceof MsgqError && e.code === status.INTERNAL);
  }
  assert.throws(() => new Schema([]), (e) => e.code === status.INTERNAL);
});

test('a binary id keeps its bytes in the delivery', () => {
  const schema = new Schema([{ name: 'id', type: 'varbinary' }]);
  const m = new Message(schema, { lengths: ['2'], values: Buffer.from([0xff, 0x00]), epoch: '1' });
  assert.ok(Buffer.isBuffer(m.delivery.id));
  assert.deepEqual(m.delivery.id, Buffer.from([0xff, 0x00]));
});

test('parses the traceparent and tracestate columns', () => {
  const schema = new Schema([
    { name: 'id', type: 'bigint' }, { name: 'traceparent', type: 'varchar' },
    { name: 'tracestate', type: 'varchar' },
  ]);
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const m = new Message(schema, row(['1', tp, 'congo=t61rcWkgMzE']));
  assert.deepEqual({ ...m.traceContext }, {
    traceparent: tp, tracestate: 'congo=t61rcWkgMzE',
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7',
    traceFlags: 1, sampled: true,
  });
  for (const bad of [
    'garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
  ]) {
    assert.equal(msgq.parseTraceparent(bad), null, bad);
  }
  assert.equal(msgq.parseTraceparent(
    '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future').sampled, false);
  assert.equal(new Message(schema, row(['1', null, null])).traceContext, null);
});

test('handler results', () => {
  assert.equal(msgq.ack().kind, 'ack');
  assert.deepEqual({ ...msgq.retry() }, { kind: 'retry', delay: undefined, reason: '' });
  assert.deepEqual({ ...msgq.retry({ delay: 2, reason: 'x' }) }, { kind: 'retry', delay: 2, reason: 'x' });
  assert.equal(msgq.retry({ delay: -1 }).delay, 0);
  assert.throws(() => msgq.retry({ delay: NaN }), RangeError);
  assert.deepEqual({ ...msgq.dead('why') }, { kind: 'dead', delay: undefined, reason: 'why' });
  assert.equal(msgq.outcome(undefined).kind, 'ack');
  assert.equal(msgq.outcome(true).kind, 'ack');
  assert.equal(msgq.outcome(false).kind, 'retry');
  assert.match(msgq.outcome(42).reason, /handler returned 42/);
});

test('backoff grows, caps and resets', () => {
  const b = new Backoff({ initial: 0.1, multiplier: 2, max: 1, jitter: 0 });
  assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next(), b.next()],
                   [0.1, 0.2, 0.4, 0.8, 1, 1]);
  b.reset();
  assert.equal(b.next(), 0.1);
  const j = new Backoff({ initial: 1, max: 10, jitter: 0.2 });
  for (let i = 0; i < 50; i++) {
    j.reset();
    const d = j.next();
    assert.ok(d >= 0.8 && d <= 1.2, String(d));
  }
});

test('ack batcher batches by size and delay, retries, flushes on close', async () => {
  const sent = [];
  let fail = 0;
  const errors = [];
  const b = new AckBatcher({ maxBatch: 3, maxDelay: 0.05, maxAttempts: 2 }, async (ids) => {
    sent.push(ids);
    if (fail > 0) {
      fail--;
      throw new MsgqError(status.UNAVAILABLE, 'down');
    }
  }, (e) => errors.push(e.code));
  for (const id of ['1', '2', '3', '4']) b.add(id);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(sent, [['1', '2', '3']]);      // full batch at once
  await new Promise((r) => setTimeout(r, 80));
  assert.deepEqual(sent, [['1', '2', '3'], ['4']]); // the rest after the delay
  fail = 1;
  b.add('5');
  b.add('6');
  await b.close();
  assert.deepEqual(sent.slice(2), [['5', '6'], ['5', '6']]); // retried once
  assert.deepEqual(errors, [status.UNAVAILABLE]);
  assert.equal(b.add('7'), false);
});

test('ack batcher drops a batch after max attempts or a permanent error', async () => {
  const sent = [];
  const b = new AckBatcher({ maxBatch: 10, maxDelay: 0.01, maxAttempts: 2 }, async (ids) => {
    sent.push(ids);
    throw new MsgqError(ids[0] === 'p' ? status.NOT_FOUND : status.UNAVAILABLE, 'x');
  });
  b.add('p');
  await new Promise((r) => setTimeout(r, 50));
  b.add('u');
  await b.close();
  assert.deepEqual(sent, [['p'], ['u'], ['u']]);
});

test('heartbeat extends until the cap and stops on a lost delivery', async () => {
  const calls = [];
  let answer = 1;
  const h = new Heartbeat({ fraction: 0.5, maxExtension: 3, ackWait: 2 },
                          async (d, seconds) => { calls.push([d.id, seconds]); return answer; });
  const t0 = 1000;  // seconds on the monotonic clock
  const ticket = h.begin({ id: 'a', epoch: 0 }, t0);
  clearTimeout(h.timer); // driven by hand below
  await h.tick(t0 + 0.5);
  assert.deepEqual(calls, []);                     // not due before 1 s
  await h.tick(t0 + 1);
  assert.deepEqual(calls, [['a', 2]]);
  await h.tick(t0 + 2);
  await h.tick(t0 + 3);
  await h.tick(t0 + 4);                          // cap: R + 2 + 3 = 5 s
  assert.deepEqual(calls.map((c) => c[1]), [2, 2, 2, 1]);
  await h.tick(t0 + 5);
  assert.equal(calls.length, 4);                    // exhausted
  h.end(ticket);
  answer = 0;
  h.begin({ id: 'b', epoch: 1 }, t0);
  await h.tick(t0 + 1);
  await h.tick(t0 + 2);
  assert.deepEqual(calls.slice(4), [['b', 2]]);     // lost: never again
  assert.deepEqual(h.stats, { extended: 4, lost: 1, errors: 0 });
  await h.close();
});

test('UUIDv7 layout: milliseconds, version 7, variant 10, random bits', () => {
  assert.equal(uuidv7(0x0123456789ab, Buffer.alloc(10, 0x00)), '01234567-89ab-7000-8000-000000000000');
  assert.equal(uuidv7(0x0123456789ab, Buffer.alloc(10, 0xff)), '01234567-89ab-7fff-bfff-ffffffffffff');
  assert.match(uuidv7(), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('bytes fields take strings as UTF-8, never base64', () => {
  assert.deepEqual(bytes('abcd'), Buffer.from('abcd', 'utf8'));
  assert.deepEqual(bytes(17), Buffer.from('17'));
  assert.deepEqual(bytes(Buffer.from([1])), Buffer.from([1]));
  assert.throws(() => bytes({}), (e) => e.code === status.INVALID_ARGUMENT);
  assert.deepEqual({ ...tableRef('t') }, { keyspace: '', name: 't' });
  assert.deepEqual({ ...tableRef({ keyspace: 'k', name: 't' }) }, { keyspace: 'k', name: 't' });
  assert.throws(() => tableRef(''), (e) => e.code === status.INVALID_ARGUMENT);
});

test('the proto is found and options are checked', async () => {
  for (const internal of ['Backoff', 'AckBatcher', 'Heartbeat', 'findProtoDir']) {
    assert.equal(internal in msgq, false, `${internal} is not exported`);
  }
  assert.ok(require('node:fs').existsSync(`${findProtoDir()}/msgq/v1/messaging.proto`));
  assert.throws(() => new msgq.Subscriber({ servers: [], table: 't', handler: () => {} }),
                (e) => e.code === status.INVALID_ARGUMENT);
  assert.throws(() => new msgq.Subscriber({ servers: 'a:1,a:1', table: 't', handler: () => {} }),
                /given twice/);
  assert.throws(() => new msgq.Subscriber({ servers: 'a:1', table: 't', handler: () => {}, concurrency: 0 }),
                /concurrency/);
  assert.throws(() => new msgq.Subscriber({ servers: 'a:1', table: 't', signal: {} }),
                (e) => e.code === status.INVALID_ARGUMENT && /AbortSignal/.test(e.message));
  const handled = new msgq.Subscriber({ servers: 'a:1', table: 't', handler: () => {} });
  assert.throws(() => handled[Symbol.asyncIterator](),
                (e) => e.code === status.FAILED_PRECONDITION && /not iterable/.test(e.message));
  const client = new msgq.Client('127.0.0.1:1', { timeout: 2 });
  await assert.rejects(client.nack('t', [{ id: '1', epoch: 0 }], { delay: -1 }),
                       (e) => e.code === status.INVALID_ARGUMENT);
  await assert.rejects(client.extend('t', [{ id: '1', epoch: 0 }], 0),
                       (e) => e.code === status.INVALID_ARGUMENT);
  assert.equal(await client.ack('t', []), 0);
  await assert.rejects(client.listTables(), (e) => e instanceof MsgqError && e.code === status.UNAVAILABLE);
  client.close();
});
