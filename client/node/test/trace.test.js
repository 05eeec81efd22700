'use strict';
// Trace context from producer to consumer: a producer span -> an INSERT
// (mysql2, in the producer's transaction) writing traceparent/tracestate ->
// msgqd -> a CONSUMER span per delivery in an in-memory exporter, a child
// of the producer's span; a retried delivery is a second span with its
// epoch. And without @opentelemetry/api the subscriber works unchanged.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { installSdk } = require('../testing/otel');
const { Env, messageTableDdl, eventually, waitForTable } = require('../testing/harness');
const msgq = require('..');

const { api, exporter } = installSdk();
const { Subscriber, Client, ack, retry, traceparent, tracestate } = msgq;

let env;
let server;

const TRACE_COLUMNS = ['traceparent varchar(55)', 'tracestate varchar(512)'];

test.before(async () => {
  env = await Env.start();
  await env.sql(messageTableDdl('traced', {}, TRACE_COLUMNS));
  await env.sql(messageTableDdl('untraced', {}, TRACE_COLUMNS));
  await env.sql(messageTableDdl('plain', {}, TRACE_COLUMNS));
  server = await env.msgqd(['--databases=msgq']);
  const c = new Client(server.address);
  for (const t of ['traced', 'untraced', 'plain']) await waitForTable(c, t);
  c.close();
});

test.after(async () => {
  if (env) await env.stop();
});

async function ackedCount(table) {
  const [r] = await env.sql(`SELECT COUNT(*) AS n FROM msgq.\`${table}\` WHERE time_acked IS NOT NULL`);
  return Number(r.n);
}

test('producer span -> INSERT -> msgqd -> consumer spans (one per delivery)', async () => {
  const tracer = api.trace.getTracer('producer-app');
  // The producer's own parent carries a tracestate, which its span inherits.
  const upstream = api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331',
    traceFlags: api.TraceFlags.SAMPLED, isRemote: true,
    traceState: api.createTraceState('msgq=test,other=1'),
  });
  const conn = await env.connect('msgq');
  let producer;
  let written;
  await api.context.with(upstream, () => tracer.startActiveSpan(
    'enqueue order', { kind: api.SpanKind.PRODUCER }, async (span) => {
      producer = span.spanContext();
      written = traceparent();
      await conn.beginTransaction();
      await conn.execute(
        'INSERT INTO traced (id, message, traceparent, tracestate) VALUES (?, ?, ?, ?)',
        [1, '{"order": 7}', traceparent(), tracestate()]);
      await conn.commit();
      span.end();
    }));
  await conn.end();
  assert.equal(written, `00-${producer.traceId}-${producer.spanId}-01`);

  const seen = [];
  const sub = new Subscriber({
    servers: server.address, table: 'traced', keyspace: 'msgq',
    handler: async (msg) => {
      seen.push(msg);
      if (msg.epoch === 0) return retry({ delay: 0.2, reason: 'first try fails' });
      // The handler runs inside the consumer span: its spans are children.
      tracer.startSpan('charge card').end();
      return ack();
    },
  }).start();
  await eventually(async () => (await ackedCount('traced')) === 1, { what: 'acked' });
  await sub.close();

  assert.equal(seen.length, 2);
  assert.deepEqual({ ...seen[0].traceContext }, {
    traceparent: written, tracestate: 'msgq=test,other=1',
    traceId: producer.traceId, spanId: producer.spanId, traceFlags: 1, sampled: true,
  });
  const spans = exporter.getFinishedSpans();
  const consumers = spans.filter((s) => s.kind === api.SpanKind.CONSUMER);
  assert.equal(consumers.length, 2, 'one span per delivery');
  consumers.sort((a, b) => a.attributes['messaging.msgq.epoch'] - b.attributes['messaging.msgq.epoch']);
  consumers.forEach((s, epoch) => {
    assert.equal(s.name, 'process traced');
    assert.equal(s.spanContext().traceId, producer.traceId);
    assert.equal(s.parentSpanContext.spanId, producer.spanId, 'parent: the producer span');
    assert.equal(s.parentSpanContext.traceState.get('msgq'), 'test');
    assert.equal(s.links.length, 1);
    assert.equal(s.links[0].context.spanId, producer.spanId);
    assert.deepEqual({ ...s.attributes }, {
      'messaging.system': 'msgq',
      'messaging.operation': 'process',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': 'traced',
      'messaging.msgq.keyspace': 'msgq',
      'messaging.message.id': '1',
      'messaging.msgq.epoch': epoch,
      'messaging.msgq.outcome': epoch === 0 ? 'retry' : 'ack',
      'server.address': server.address,
    });
  });
  assert.equal(consumers[0].status.code, api.SpanStatusCode.ERROR);
  assert.equal(consumers[0].status.message, 'first try fails');
  assert.equal(consumers[1].status.code, api.SpanStatusCode.UNSET);
  const charge = spans.find((s) => s.name === 'charge card');
  assert.equal(charge.parentSpanContext.spanId, consumers[1].spanContext().spanId);
});

test('a message without traceparent gets a root consumer span; a throw is an error', async () => {
  exporter.reset();
  await env.sql("INSERT INTO msgq.untraced (id, message) VALUES (5, '{}')");
  let calls = 0;
  const sub = new Subscriber({
    servers: server.address, table: 'untraced', keyspace: 'msgq',
    handler: async (msg) => {
      calls++;
      assert.equal(msg.traceContext, null);
      if (msg.epoch === 0) throw new Error('boom');
      return ack();
    },
  }).start();
  // A throw retries with the table's backoff (vt_ack_wait = 30 s here):
  // only the first delivery's span is checked.
  await eventually(() => calls === 1 && exporter.getFinishedSpans().length === 1, { what: 'first span' });
  await sub.close();
  const [span] = exporter.getFinishedSpans();
  assert.equal(span.parentSpanContext, undefined);
  assert.equal(span.links.length, 0);
  assert.equal(span.status.code, api.SpanStatusCode.ERROR);
  assert.equal(span.status.message, 'boom');
  assert.equal(span.events[0].name, 'exception');
  assert.equal(span.attributes['messaging.msgq.outcome'], 'retry');
});

test('without @opentelemetry/api the subscriber works and still parses the context', async () => {
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  await env.sql('INSERT INTO msgq.plain (id, message, traceparent) VALUES (9, ?, ?)', ['{}', tp]);
  const script = path.join(__dirname, '..', 'testing', 'no_otel_consumer.js');
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, [script], {
      env: { ...process.env, MSGQ_SERVER: server.address, MSGQ_TABLE: 'plain' },
      timeout: 30000,
    }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
  const line = JSON.parse(out.trim().split('\n').pop());
  assert.equal(line.otelLoadable, false);
  assert.equal(line.producerHelper, null);
  assert.equal(line.id, '9');
  assert.equal(line.traceContext.traceparent, tp);
  assert.equal(line.traceContext.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  await eventually(async () => (await ackedCount('plain')) === 1, { what: 'acked by the child' });
});
