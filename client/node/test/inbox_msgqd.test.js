'use strict';
// inboxHandler (docs/effectively-once.md) through a real msgqd and the
// Subscriber: msgqd on a private MariaDB, consumer processes
// (testing/inbox_consumer.js) moving money in a second one. Two consumers on
// one redelivered message (one applies it, the other acks without applying),
// and a short kill campaign: kill -9 of msgqd and of consumers, consumers that
// SIGKILL themselves right after a commit (before the ack); at the end every
// message was applied exactly once and is acked. MSGQ_INBOX_SEED=N replays a
// campaign.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { Env, Msgqd, messageTableDdl, eventually, sleep } = require('../testing/harness');

const CONSUMER = path.join(__dirname, '..', 'testing', 'inbox_consumer.js');
const OPENING = 1000000;

let msgqEnv;
let bankEnv;
let port;
let server;
let tmp;
const consumers = new Set();

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port: p } = s.address();
      s.close(() => resolve(p));
    });
  });
}

// msgqd on the fixed port (restarts keep the address; the port may take a
// moment to be free again).
async function startMsgqd() {
  for (let attempt = 0; ; attempt += 1) {
    try {
      server = await Msgqd.start(msgqEnv.socket, ['--databases=msgq', `--listen=127.0.0.1:${port}`]);
      return;
    } catch (err) {
      if (attempt >= 20) throw err;
      await sleep(250);
    }
  }
}

before(async () => {
  msgqEnv = await Env.start();
  bankEnv = await Env.start({ databases: ['bank'] });
  tmp = msgqEnv.tempDir('msgq-node-inbox-');
  port = await freePort();
});

after(async () => {
  for (const c of consumers) c.kill('SIGKILL');
  if (server) await server.kill();
  if (bankEnv) await bankEnv.stop();
  if (msgqEnv) await msgqEnv.stop();
});

async function setUp(table, directives) {
  await bankEnv.sql('DROP TABLE IF EXISTS bank.accounts, bank.applied, bank.msgq_inbox');
  await bankEnv.sql('CREATE TABLE bank.accounts (id int PRIMARY KEY, balance bigint NOT NULL)');
  await bankEnv.sql('CREATE TABLE bank.applied (message_id bigint PRIMARY KEY, times int NOT NULL)');
  await bankEnv.sql('INSERT INTO bank.accounts VALUES (1, ?), (2, 0)', [OPENING]);
  await msgqEnv.sql(messageTableDdl(table, { vt_ack_wait: 1, vt_batch_size: 5, vt_poller_interval: 1, ...directives }));
}

async function insertTransfers(table, from, to) {
  const rows = [];
  for (let i = from; i <= to; i += 1) rows.push([i, JSON.stringify({ from: 1, to: 2, amount: i })]);
  await msgqEnv.sql(`INSERT INTO msgq.\`${table}\` (id, message) VALUES ?`, [rows]);
}

let consumerCount = 0;
// Starts a consumer process; returns { proc, events, exited }.
function startConsumer(table, options = {}) {
  consumerCount += 1;
  const events = path.join(tmp, `c${consumerCount}.events`);
  const log = fs.openSync(`${events}.log`, 'a');
  const proc = spawn(process.execPath, [CONSUMER, JSON.stringify({
    server: `127.0.0.1:${port}`, keyspace: 'msgq', table, socket: bankEnv.socket,
    database: 'bank', events, ...options,
  })], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  consumers.add(proc);
  const c = { proc, events, signal: null, alive: true };
  c.exited = new Promise((resolve) => proc.once('exit', (code, signal) => {
    c.alive = false;
    c.signal = signal;
    consumers.delete(proc);
    resolve();
  }));
  return c;
}

async function kill(c) {
  if (c.alive) c.proc.kill('SIGKILL');
  await c.exited;
}

function readEvents(file) {
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch { return []; }
  return text.split('\n').slice(0, -1).map((l) => l.split(' ')).filter((f) => f.length === 2);
}
const hasEvent = (file, what, id) => readEvents(file).some(([w, i]) => w === what && i === id);

async function acked(table) {
  return Number((await msgqEnv.sql(`SELECT COUNT(*) AS n FROM msgq.\`${table}\` WHERE time_acked IS NOT NULL`))[0].n);
}
async function balances() {
  return (await bankEnv.sql('SELECT balance FROM bank.accounts ORDER BY id')).map((r) => Number(r.balance));
}
async function applied() {
  return (await bankEnv.sql('SELECT message_id, times FROM bank.applied ORDER BY message_id'))
    .map((r) => [Number(r.message_id), Number(r.times)]);
}
function logs() {
  let out = '';
  for (const name of fs.readdirSync(tmp).sort()) {
    out += `--- ${name}\n${fs.readFileSync(path.join(tmp, name), 'utf8').slice(-2000)}\n`;
  }
  return `${out}--- msgqd\n${server ? server.log().slice(-2000) : ''}`;
}

test('two consumer processes, one redelivered message: one applies it, the other acks without applying', async () => {
  await setUp('pair');
  await startMsgqd();
  try {
    const hold = path.join(tmp, 'release');
    // A runs the work and holds its transaction open (its inbox row locked),
    // having closed its stream, without heartbeats, so that the message's
    // next send (after the 1 s ack wait) goes to B.
    const a = startConsumer('pair', { holdFile: hold, leave: true });
    await insertTransfers('pair', 1, 1);
    await eventually(() => hasEvent(a.events, 'run', '1'), { what: `A running the work\n${logs()}` });
    const b = startConsumer('pair', { holdFile: hold });
    await eventually(async () => Number((await bankEnv.sql(
      "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE command IN ('Query', 'Execute') " +
      "AND info LIKE 'INSERT INTO `msgq_inbox`%'"))[0].n) === 1, { what: 'B waiting on the inbox row' });
    fs.writeFileSync(hold, ''); // A commits; B gets a duplicate key and acks
    await eventually(async () => hasEvent(b.events, 'dup', '1') && (await acked('pair')) === 1,
      { what: 'B skipping the message, and its ack' });
    assert.deepEqual(readEvents(a.events), [['run', '1'], ['commit', '1']]);
    assert.equal(hasEvent(b.events, 'run', '1'), false);
    assert.deepEqual(await balances(), [OPENING - 1, 1]);
    assert.deepEqual(await applied(), [[1, 1]]);
    await kill(b);
    await a.exited;
  } finally {
    await server.kill();
  }
});

test('kill campaign: each transfer applied exactly once and acked across kill -9 of msgqd and consumers', async () => {
  const MESSAGES = 40;
  const KILLS = 4;
  const CRASH = 0.2; // a consumer's SIGKILL right after a commit
  const seed = Number(process.env.MSGQ_INBOX_SEED || Date.now() % 100000);
  console.log(`MSGQ_INBOX_SEED=${seed}`);
  let state = seed >>> 0;
  const random = () => { // mulberry32
    state = (state + 0x6D2B79F5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  await setUp('transfers', { vt_max_backoff: 2 });
  await startMsgqd();
  await insertTransfers('transfers', 1, MESSAGES);
  const all = [];
  const start = (crash) => {
    const c = startConsumer('transfers', { crashAfterCommit: crash, seed: Math.floor(random() * 2 ** 31), workDelayMs: 30 });
    all.push(c);
    return c;
  };
  // The first consumer dies right after its first commit, so the window
  // between commit and ack is hit in every run; the others now and then.
  const live = [start(1), start(CRASH)];
  const killed = new Set();
  const counts = { msgqd: 0, consumer: 0, both: 0 };
  const began = Date.now();
  const commits = () => all.reduce((n, c) => n + readEvents(c.events).filter(([w]) => w === 'commit').length, 0);
  const replaceDead = () => {
    for (let i = 0; i < live.length; i += 1) if (!live[i].alive) live[i] = start(CRASH);
  };
  for (let k = 0; k < KILLS; k += 1) {
    // Each kill waits for some progress (3 commits, up to 10 s), so that
    // the consumers, which take a second or more to load and connect on a
    // loaded machine, do work between kills; the dead are replaced meanwhile.
    const before = commits();
    await eventually(() => {
      replaceDead();
      return commits() >= Math.min(MESSAGES, before + 3);
    }, { timeoutMs: 10000, what: 'progress' }).catch(() => {});
    await sleep(random() * 500);
    const action = ['msgqd', 'consumer', 'consumer', 'both'][Math.floor(random() * 4)];
    counts[action] += 1;
    if (action !== 'msgqd') {
      const victim = live[Math.floor(random() * live.length)];
      if (victim.alive) killed.add(victim); // (else it crashed by itself)
      await kill(victim);
    }
    if (action !== 'consumer') {
      await server.kill();
      await sleep(random() * 300);
      await startMsgqd();
    }
    replaceDead();
  }
  await sleep(1000);
  for (const c of live) {
    killed.add(c);
    await kill(c);
  }
  const selfCrashes = all.filter((c) => !killed.has(c) && !c.alive && c.signal === 'SIGKILL').length;
  // Finish with consumers that do not crash.
  for (let i = 0; i < live.length; i += 1) live[i] = start(0);
  try {
    await eventually(async () => (await acked('transfers')) === MESSAGES,
      { timeoutMs: 60000, what: `all ${MESSAGES} acked\n${logs()}` });
  } finally {
    for (const c of live) await kill(c);
    await server.kill();
  }
  const tally = { run: 0, commit: 0, dup: 0 };
  const perConsumer = all.map((c) => {
    const events = readEvents(c.events);
    for (const [what] of events) tally[what] += 1;
    return `${events.length}${c.signal === 'SIGKILL' ? (killed.has(c) ? 'k' : 'c') : ''}`;
  });
  console.log(`campaign: ${MESSAGES} messages, kills ${JSON.stringify(counts)}, ${all.length} consumers started, ` +
    `${selfCrashes} crashes right after a commit, work runs ${tally.run}, commits ${tally.commit}, ` +
    `duplicates acked ${tally.dup}, events per consumer ${perConsumer.join(' ')} ` +
    `(k: killed by the test, c: crashed after a commit, the last two: the finishers), ${((Date.now() - began) / 1000).toFixed(1)} s`);
  // Exactly once: each message applied once, the balances add up.
  assert.deepEqual(await applied(), Array.from({ length: MESSAGES }, (_, i) => [i + 1, 1]));
  const total = (MESSAGES * (MESSAGES + 1)) / 2;
  assert.deepEqual(await balances(), [OPENING - total, total]);
  // (A kill between the COMMIT and the "commit" line loses the line.)
  assert.ok(tally.commit <= MESSAGES, `${tally.commit} commits`);
  assert.equal(Number((await bankEnv.sql('SELECT COUNT(*) AS n FROM bank.msgq_inbox'))[0].n), MESSAGES);
  assert.equal(await acked('transfers'), MESSAGES);
  // The campaign hit the window between commit and ack.
  assert.ok(selfCrashes > 0, `no crash right after a commit (seed ${seed})`);
  assert.ok(tally.dup > 0, `no duplicate acked (seed ${seed})`);
});
