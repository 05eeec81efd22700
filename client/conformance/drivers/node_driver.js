'use strict';
// The Node client's conformance driver (client/conformance/README.md):
//
//   node node_driver.js SERVER TABLE SCENARIO_JSON
//
// runs the driver part of one scenario of client/conformance/scenarios.json
// with the msgq package's Subscriber (and enqueue on a mysql2 connection)
// and prints one JSON line: the deliveries (id, epoch, seconds since the
// first), the handlers finished when close() resolved, the ids enqueued.
const path = require('node:path');
const { createRequire } = require('node:module');

const nodeDir = path.join(__dirname, '..', '..', 'node');
const msgq = require(nodeDir);
const requireFromNode = createRequire(path.join(nodeDir, 'package.json'));

const [server, table, specText] = process.argv.slice(2);
const spec = JSON.parse(specText);

async function produce() {
  const mysql = requireFromNode('mysql2/promise');
  const ids = {};
  for (const [name, commit] of [['committed', true], ['rolled_back', false]]) {
    const conn = await mysql.createConnection({
      socketPath: spec.mysql_socket, user: 'root', database: spec.database });
    try {
      await conn.beginTransaction();
      ids[name] = await msgq.enqueue(conn, table, { body: { conformance: name } });
      if (commit) await conn.commit(); else await conn.rollback();
    } finally {
      await conn.end();
    }
  }
  return ids;
}

// The error's kind, as scenarios.json names it.
function errorKind(e) {
  if (!(e instanceof msgq.MsgqError)) return `other: ${e}`;
  switch (e.code) {
    case msgq.status.NOT_FOUND: return 'unknown_table';
    case msgq.status.UNAUTHENTICATED: return 'unauthenticated';
    case msgq.status.PERMISSION_DENIED: return 'permission_denied';
    case msgq.status.INVALID_ARGUMENT: return 'invalid_argument';
    case msgq.status.UNAVAILABLE: return 'unavailable';
    default: return `other: ${e.message}`;
  }
}

async function consume() {
  const deliveries = [];
  const seen = new Set();
  let first = null;
  let started = 0;
  let finished = 0;
  let stopNow;
  const stopped = new Promise((resolve) => { stopNow = resolve; });
  const shouldStop = () => (spec.stop_after !== undefined
    ? finished >= spec.stop_after : started >= spec.close_when_started);

  const outcome = (again) => {
    switch (spec.handler) {
      case 'ack':
      case 'sleep_ack':
        return msgq.ack();
      case 'retry_once':
        return again ? msgq.ack()
          : msgq.retry({ delay: spec.delay, reason: 'conformance retry' });
      case 'throw_once':
        if (!again) throw new Error('conformance error');
        return msgq.ack();
      case 'dead':
        return msgq.dead('conformance dead');
      default:
        throw new Error(`unknown handler ${spec.handler}`);
    }
  };

  const handler = async (message) => {
    const now = performance.now() / 1000;
    if (first === null) first = now;
    deliveries.push({ id: message.id, epoch: message.epoch,
                      t: Math.round((now - first) * 1000) / 1000 });
    started++;
    const again = seen.has(message.id);
    seen.add(message.id);
    if (shouldStop()) stopNow();
    try {
      if (spec.handler === 'sleep_ack') {
        await new Promise((resolve) => setTimeout(resolve, spec.sleep * 1000));
      }
      return outcome(again);
    } finally {
      finished++;
      if (shouldStop()) stopNow();
    }
  };

  const sub = new msgq.Subscriber({ servers: server, table, handler,
                                    concurrency: spec.concurrency,
                                    tracing: false }).start();
  const ended = sub.wait().then(() => null, (e) => e);
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; stopNow(); }, spec.timeout * 1000);
  await Promise.race([stopped, ended]);
  clearTimeout(timer);
  await sub.close();
  const fatal = await ended;
  return { deliveries, finished_before_close: finished, timedOut,
           error: fatal === null ? undefined : errorKind(fatal) };
}

(async () => {
  const out = {};
  if (spec.mode === 'produce') out.enqueued = await produce();
  const { deliveries, finished_before_close: finished, timedOut, error } = await consume();
  out.deliveries = deliveries;
  out.finished_before_close = finished;
  if (timedOut) out.timed_out = true;
  if (error !== undefined) out.error = error;
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
})().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
