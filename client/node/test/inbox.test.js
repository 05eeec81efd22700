'use strict';
// inboxHandler / purgeInbox (docs/effectively-once.md) against a private
// MariaDB as the consumer's database: once per id, rollback, two consumers on
// one message (the second waits on the inbox row, then acks without working),
// the missing-grant error, purge after the retention and not before.

const { test, before, after, beforeEach } = require('node:test');
const assert = require('node:assert/strict');
const mysql = require('mysql2/promise');
const { Env, eventually } = require('../testing/harness');
const { inboxHandler, purgeInbox, InboxError, ack, retry, dead } = require('../lib');

let env;
let pool;
before(async () => {
  env = await Env.start({ databases: ['bank'] });
  pool = mysql.createPool({ socketPath: env.socket, user: 'root', database: 'bank', connectionLimit: 4 });
  await env.sql('CREATE TABLE bank.accounts (id int PRIMARY KEY, balance bigint NOT NULL)');
});
after(async () => {
  if (pool) await pool.end();
  if (env) await env.stop();
});
beforeEach(async () => {
  await env.sql('DELETE FROM bank.accounts');
  await env.sql('INSERT INTO bank.accounts VALUES (1, 1000), (2, 0)');
  await env.sql('DROP TABLE IF EXISTS bank.msgq_inbox');
});

function message(id, amount) {
  return { id: String(id), idBytes: Buffer.from(String(id)), json: () => ({ from: 1, to: 2, amount }) };
}
async function balances() {
  const rows = await env.sql('SELECT id, balance FROM bank.accounts ORDER BY id');
  return rows.map((r) => Number(r.balance));
}
async function transfer(msg, conn) {
  const t = msg.json('message');
  await conn.query('UPDATE accounts SET balance = balance - ? WHERE id = ?', [t.amount, t.from]);
  await conn.query('UPDATE accounts SET balance = balance + ? WHERE id = ?', [t.amount, t.to]);
  return ack();
}
const quiet = () => {};

test('runs once per id and acks duplicates without running', async () => {
  let runs = 0;
  const h = inboxHandler({ pool, source: 'test', table: 'transfers', keyspace: 'msgq', log: quiet },
    async (m, c) => { runs += 1; return transfer(m, c); });
  assert.deepEqual(await h(message(7, 30)), ack());
  assert.deepEqual(await h(message(7, 30)), ack());
  assert.equal(runs, 1);
  assert.deepEqual(await balances(), [970, 30]);
  const rows = await env.sql('SELECT source, keyspace, table_name, message_id FROM bank.msgq_inbox');
  assert.deepEqual(rows.map((r) => [r.source, r.keyspace, r.table_name, r.message_id.toString()]),
    [['test', 'msgq', 'transfers', '7']]);
});

test('a failing work rolls back with its inbox row', async () => {
  const opts = { pool, source: 'test', table: 't', log: quiet };
  const fails = inboxHandler(opts, async (m, c) => { await transfer(m, c); throw new Error('backend down'); });
  assert.deepEqual(await fails(message(1, 5)), retry({ reason: 'backend down' }));
  const retries = inboxHandler(opts, async (m, c) => { await transfer(m, c); return retry({ delay: 5, reason: 'later' }); });
  assert.deepEqual(await retries(message(1, 5)), retry({ delay: 5, reason: 'later' }));
  const kills = inboxHandler(opts, async (m, c) => { await transfer(m, c); return dead('bad'); });
  assert.deepEqual(await kills(message(1, 5)), dead('bad'));
  assert.deepEqual(await balances(), [1000, 0]);
  assert.deepEqual(await env.sql('SELECT * FROM bank.msgq_inbox'), []);
  assert.deepEqual(await inboxHandler(opts, transfer)(message(1, 5)), ack());
  assert.deepEqual(await balances(), [995, 5]);
});

test('two consumers, one message: one applies it, the other acks without applying', async () => {
  const poolB = mysql.createPool({ socketPath: env.socket, user: 'root', database: 'bank' });
  try {
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    let started;
    const startedP = new Promise((resolve) => { started = resolve; });
    const runs = { a: 0, b: 0 };
    let bDuplicate = false;
    const a = inboxHandler({ pool, source: 'test', table: 't', log: quiet },
      async (m, c) => { runs.a += 1; await transfer(m, c); started(); await held; return ack(); });
    const b = inboxHandler({ pool: poolB, source: 'test', table: 't', log: quiet,
      onDuplicate: () => { bDuplicate = true; } },
    async (m, c) => { runs.b += 1; return transfer(m, c); });
    const aDone = a(message(9, 25));
    await startedP;
    const bDone = b(message(9, 25));
    // B's INSERT waits on A's inbox row.
    await eventually(async () => (await env.sql(
      "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE command = 'Query' " +
      "AND info LIKE 'INSERT INTO `msgq_inbox`%'"))[0].n == 1, { what: 'B waiting on the inbox row' });
    release();
    assert.deepEqual(await aDone, ack());
    assert.deepEqual(await bDone, ack());
    assert.deepEqual(runs, { a: 1, b: 0 });
    assert.equal(bDuplicate, true);
    assert.deepEqual(await balances(), [975, 25]);
  } finally {
    await poolB.end();
  }
});

test('names the missing CREATE grant', async () => {
  await env.sql("CREATE USER IF NOT EXISTS 'nocreate'@'localhost' IDENTIFIED BY 'pw'");
  await env.sql("GRANT SELECT, INSERT, UPDATE, DELETE ON bank.* TO 'nocreate'@'localhost'");
  const p = mysql.createPool({ socketPath: env.socket, user: 'nocreate', password: 'pw', database: 'bank' });
  try {
    let runs = 0;
    const h = inboxHandler({ pool: p, source: 'test', table: 't', log: quiet }, async () => { runs += 1; });
    const result = await h(message(3, 1));
    assert.equal(result.kind, 'retry');
    assert.match(result.reason, /GRANT CREATE/);
    assert.equal(runs, 0);
    assert.ok(InboxError);
  } finally {
    await p.end();
  }
});

test('purges after the retention and not before', async () => {
  const h = inboxHandler({ pool, source: 'test', table: 't', log: quiet }, transfer);
  for (let i = 1; i <= 25; i += 1) assert.deepEqual(await h(message(i, 1)), ack());
  await env.sql('UPDATE bank.msgq_inbox SET processed_at = NOW(6) - INTERVAL 100 SECOND WHERE CAST(message_id AS UNSIGNED) <= 10');
  await env.sql('UPDATE bank.msgq_inbox SET processed_at = NOW(6) - INTERVAL 50 SECOND WHERE CAST(message_id AS UNSIGNED) BETWEEN 11 AND 15');
  assert.equal(await purgeInbox(pool, { retentionSeconds: 200 }), 0);
  assert.equal(await purgeInbox(pool, { retentionSeconds: 60, batch: 3 }), 10);
  assert.equal(await purgeInbox(pool, { retentionSeconds: 60, batch: 3 }), 0);
  assert.equal(await purgeInbox(pool, { retentionSeconds: 40 }), 5);
  const left = await env.sql('SELECT message_id FROM bank.msgq_inbox');
  assert.deepEqual(left.map((r) => Number(r.message_id.toString())).sort((x, y) => x - y),
    [16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
  await assert.rejects(purgeInbox(pool, { retentionSeconds: 0 }), RangeError);
});
