'use strict';
// The consumer process of test/inbox_msgqd.test.js: a Subscriber whose
// handler is inboxHandler, moving money between two accounts of its own
// database for each message, until it is killed.
//
//   node testing/inbox_consumer.js '{"server": "127.0.0.1:PORT", "keyspace": "msgq",
//     "table": "transfers", "socket": "/path/mysqld.sock", "database": "bank",
//     "events": "/tmp/c1.events", "crashAfterCommit": 0.1, "seed": 7,
//     "workDelayMs": 30, "holdFile": "/tmp/release", "leave": false}'
//
// It appends one line per event to `events` with one write each, so a
// kill -9 loses no line written: "run ID" when the work starts, "commit ID"
// after the commit, "dup ID" for a message found in the inbox.
// crashAfterCommit: probability of SIGKILLing itself right after a commit,
// before the ack. holdFile: the work waits before its commit until the file
// exists. leave: the stream is closed when the work starts (so the next send
// of the message goes to another consumer), without heartbeats, and the
// process exits after that one message.

const fs = require('node:fs');
const { setTimeout: sleep } = require('node:timers/promises');
const mysql = require('mysql2/promise');
const { Subscriber, inboxHandler, ack } = require('../lib');

const o = JSON.parse(process.argv[2]);
const events = fs.openSync(o.events, 'a');
const logEvent = (what, msg) => fs.writeSync(events, `${what} ${msg.id}\n`);

// mulberry32: a seeded random source, so that a campaign can be replayed.
let state = (o.seed || 0) >>> 0;
function random() {
  state = (state + 0x6D2B79F5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const pool = mysql.createPool({ socketPath: o.socket, user: 'root', database: o.database, connectionLimit: 4 });
let sub;
let finished;
const done = new Promise((resolve) => { finished = resolve; });

const handler = inboxHandler({
  pool, source: 'test', table: o.table, keyspace: o.keyspace,
  onCommitted: (msg) => {
    logEvent('commit', msg);
    if (random() < (o.crashAfterCommit || 0)) process.kill(process.pid, 'SIGKILL'); // before the ack
  },
  onDuplicate: (msg) => logEvent('dup', msg),
}, async (msg, conn) => {
  logEvent('run', msg);
  if (o.leave) finished(sub.close());
  const t = msg.json('message');
  await conn.query('UPDATE accounts SET balance = balance - ? WHERE id = ?', [t.amount, t.from]);
  await conn.query('UPDATE accounts SET balance = balance + ? WHERE id = ?', [t.amount, t.to]);
  await conn.query('INSERT INTO applied VALUES (?, 1) ON DUPLICATE KEY UPDATE times = times + 1', [msg.id]);
  if (o.workDelayMs) await sleep(random() * o.workDelayMs);
  while (o.holdFile && !fs.existsSync(o.holdFile)) await sleep(10);
  return ack();
});

sub = new Subscriber({
  servers: o.server, table: o.table, keyspace: o.keyspace, handler,
  concurrency: o.leave ? 1 : 2, tracing: false,
  backoff: { initial: 0.05, max: 0.5 },
  ack: { maxDelay: 0.02 },
  heartbeat: o.leave ? { maxExtension: 0 } : undefined,
  onHandlerError: (err) => process.stderr.write(`handler: ${err && err.stack}\n`),
}).start();

(async () => {
  if (o.leave) {
    await done;
  } else {
    await sub.wait(); // until killed, or a fatal error
  }
  await pool.end();
  process.exit(0);
})().catch((err) => {
  process.stderr.write(`consumer: ${err && err.stack}\n`);
  process.exit(1);
});
