// @ts-check
'use strict';
// The Subscriber across servers: fan-in from two msgqd (two databases, the
// same ids in both, each message settled where it came from), a msgqd
// restart mid-stream (nothing lost, never twice inside the ack wait), and
// TLS with client certificates plus a bearer token.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Env, messageTableDdl, eventually, waitForTable, sleep, makeTestCertificates,
  tokenLine,
} = require('../testing/harness');
const { Subscriber, Client, ack, retry, status, MsgqError } = require('..');

let env;

test.before(async () => {
  env = await Env.start({ databases: ['msgq', 'shard1', 'shard2'] });
});

test.after(async () => {
  if (env) await env.stop();
});

async function ackedIds(db, table) {
  const rows = await env.sql(`SELECT id FROM \`${db}\`.\`${table}\` WHERE time_acked IS NOT NULL ORDER BY id`);
  return rows.map((r) => Number(r.id));
}

async function insertRange(db, table, from, to) {
  const values = [];
  for (let i = from; i <= to; i++) values.push(`(${i}, '{"n": ${i}}')`);
  await env.sql(`INSERT INTO \`${db}\`.\`${table}\` (id, message) VALUES ${values.join(',')}`);
}

test('fan-in: two servers, the same ids, each settled on its own server', async () => {
  for (const db of ['shard1', 'shard2']) await env.sql(messageTableDdl('orders', {}, [], db));
  const a = await env.msgqd(['--databases=shard1']);
  const b = await env.msgqd(['--databases=shard2']);
  for (const [s, db] of [[a, 'shard1'], [b, 'shard2']]) {
    const c = new Client(s.address);
    await waitForTable(c, 'orders', db);
    c.close();
  }
  await insertRange('shard1', 'orders', 1, 5);
  await insertRange('shard2', 'orders', 1, 5);
  const seen = [];
  const connected = new Set();
  const sub = new Subscriber({
    servers: [a.address, b.address], table: 'orders', concurrency: 3,
    onConnected: (name) => connected.add(name),
    handler: async (msg) => {
      seen.push(`${msg.server}/${msg.id}/${msg.epoch}`);
      // id 3 of the second server is retried once: its nack must go there.
      if (msg.server === b.address && msg.id === '3' && msg.epoch === 0) {
        return retry({ delay: 0.2 });
      }
      return ack();
    },
  }).start();
  await eventually(async () =>
    (await ackedIds('shard1', 'orders')).length === 5 &&
    (await ackedIds('shard2', 'orders')).length === 5, { what: 'both shards acked' });
  await sub.close();
  assert.deepEqual([...connected].sort(), [a.address, b.address].sort());
  const expected = [];
  for (const s of [a.address, b.address]) {
    for (let i = 1; i <= 5; i++) expected.push(`${s}/${i}/0`);
  }
  expected.push(`${b.address}/3/1`);
  assert.deepEqual(seen.sort(), expected.sort());
  const stats = sub.stats();
  assert.equal(stats.acked, 10);
  assert.equal(stats.retried, 1);
  await a.stop();
  await b.stop();
});

test('msgqd restart mid-stream: nothing lost, never twice inside the ack wait', async () => {
  const ACK_WAIT = 4;
  await env.sql(messageTableDdl('stream', { vt_ack_wait: ACK_WAIT, vt_poller_interval: 1 }));
  let server = await env.msgqd(['--databases=msgq']);
  const address = server.address;
  const c = new Client(address);
  await waitForTable(c, 'stream');
  c.close();
  const deliveries = new Map(); // id -> [time of each delivery]
  const streamErrors = [];
  const sub = new Subscriber({
    servers: address, table: 'stream', keyspace: 'msgq', concurrency: 2,
    backoff: { initial: 0.05, max: 0.5 },
    onStreamError: (e) => streamErrors.push(e.code),
    handler: async (msg) => {
      const id = Number(msg.id);
      if (!deliveries.has(id)) deliveries.set(id, []);
      deliveries.get(id).push(Date.now());
      await sleep(10);
      return ack();
    },
  }).start();

  // A producer inserts ids 1..N every 40 ms while msgqd is stopped with
  // SIGTERM and started again on the same port.
  const N = 60;
  let produced = 0;
  const producer = (async () => {
    for (let i = 1; i <= N; i++) {
      await env.sql('INSERT INTO msgq.stream (id, message) VALUES (?, ?)', [i, '{}']);
      produced = i;
      await sleep(40);
    }
  })();
  await eventually(() => deliveries.size >= 10, { what: 'first messages' });
  await server.stop('SIGTERM');
  await sleep(300);
  server = await env.msgqd(['--databases=msgq', `--listen=${address}`]);
  assert.equal(server.address, address);
  await eventually(() => produced >= 40, { what: 'producer past 40' });

  // Then a kill -9 once quiet, with messages enqueued while it is down.
  await producer;
  await eventually(async () => (await ackedIds('msgq', 'stream')).length === N,
                   { what: `all ${N} acked`, timeoutMs: 20000 });
  await server.kill();
  await insertRange('msgq', 'stream', N + 1, N + 10);
  server = await env.msgqd(['--databases=msgq', `--listen=${address}`]);
  await eventually(async () => (await ackedIds('msgq', 'stream')).length === N + 10,
                   { what: `all ${N + 10} acked`, timeoutMs: 20000 });
  await sub.close();
  await server.stop();

  assert.ok(streamErrors.length >= 2, `reconnected (${streamErrors.length} stream errors)`);
  for (let i = 1; i <= N + 10; i++) {
    const times = deliveries.get(i);
    assert.ok(times && times.length >= 1, `id ${i} handled`);
    for (let k = 1; k < times.length; k++) {
      assert.ok(times[k] - times[k - 1] >= ACK_WAIT * 1000 - 250,
                `id ${i} seen again after ${times[k] - times[k - 1]} ms, inside the ack wait`);
    }
  }
  assert.ok(sub.stats().reconnects >= 2);
});

test('TLS with a bearer token, and TLS with client certificates (mTLS)', async () => {
  const dir = env.tempDir('msgq-node-tls-');
  await makeTestCertificates(dir);
  const p = (name) => path.join(dir, name);
  // Mode 0600: msgqd refuses a token file that group or others may write.
  fs.writeFileSync(p('tokens'), tokenLine('tok-worker', 'worker'), { mode: 0o600 });
  fs.writeFileSync(p('worker.token'), 'tok-worker\n', { mode: 0o600 });
  await env.sql(messageTableDdl('secure'));
  const isCode = (code) => (e) => e instanceof MsgqError && e.code === code;

  // 1. TLS and tokens: the subscriber with the CA and a token file.
  let server = await env.msgqd([
    '--databases=msgq', `--tls_cert=${p('server1.pem')}`, `--tls_key=${p('server1.key')}`,
    `--auth_tokens_file=${p('tokens')}`,
  ]);
  // serverName: the certificate is for IP 127.0.0.1 and DNS localhost.
  const tls = { caFile: p('ca.pem'), serverName: 'localhost' };
  const client = new Client(server.address, { tls, tokenFile: p('worker.token') });
  await waitForTable(client, 'secure');
  await insertRange('msgq', 'secure', 1, 3);
  const seen = [];
  const sub = new Subscriber({
    servers: server.address, table: 'secure', tls, tokenFile: p('worker.token'),
    handler: (msg) => { seen.push(msg.id); return ack(); },
  }).start();
  await eventually(async () => (await ackedIds('msgq', 'secure')).length === 3, { what: '3 acked' });
  await sub.close();
  assert.deepEqual(seen.sort(), ['1', '2', '3']);
  assert.equal((await client.listTables()).find((t) => t.name === 'secure').acked, 3);
  // No token, a wrong token: UNAUTHENTICATED; plaintext to the TLS port:
  // UNAVAILABLE. A subscriber without the token ends with UNAUTHENTICATED.
  const noToken = new Client(server.address, { tls });
  await assert.rejects(noToken.listTables(), isCode(status.UNAUTHENTICATED));
  noToken.close();
  const wrong = new Client(server.address, { tls, token: 'nope' });
  await assert.rejects(wrong.ack('secure', ['1']), isCode(status.UNAUTHENTICATED));
  wrong.close();
  const plain = new Client(server.address, { token: 'tok-worker', timeout: 3 });
  await assert.rejects(plain.listTables(), isCode(status.UNAVAILABLE));
  plain.close();
  const refused = new Subscriber({ servers: server.address, table: 'secure', tls, handler: () => ack() }).start();
  await assert.rejects(refused.wait(), isCode(status.UNAUTHENTICATED));
  client.close();
  await server.stop();

  // 2. mTLS (client certificates required) and tokens: the certificate's
  // identity is a principal, so a client with a certificate needs no token;
  // one without a certificate cannot connect.
  server = await env.msgqd([
    '--databases=msgq', `--tls_cert=${p('server1.pem')}`, `--tls_key=${p('server1.key')}`,
    `--tls_client_ca=${p('ca.pem')}`, `--auth_tokens_file=${p('tokens')}`,
  ]);
  const mtls = { ca: fs.readFileSync(p('ca.pem')), cert: fs.readFileSync(p('reader.pem')),
                 key: fs.readFileSync(p('reader.key')), serverName: 'localhost' };
  const withCert = new Client(server.address, { tls: mtls });
  await waitForTable(withCert, 'secure');
  await insertRange('msgq', 'secure', 4, 4);
  const got = [];
  const sub2 = new Subscriber({
    servers: server.address, table: 'secure', tls: mtls, token: 'tok-worker',
    handler: (msg) => { got.push(msg.id); return ack(); },
  }).start();
  await eventually(async () => (await ackedIds('msgq', 'secure')).length === 4, { what: '4 acked' });
  await sub2.close();
  assert.deepEqual(got, ['4']);
  withCert.close();
  const noCert = new Client(server.address, {
    tls: { caFile: p('ca.pem'), serverName: 'localhost' }, token: 'tok-worker', timeout: 3,
  });
  await assert.rejects(noCert.listTables(), isCode(status.UNAVAILABLE));
  noCert.close();
  assert.throws(() => new Client(server.address, { tls: { cert: mtls.cert } }),
                isCode(status.INVALID_ARGUMENT));
  await server.stop();
});
