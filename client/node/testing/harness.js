'use strict';
// Test harness: a private MariaDB (tools/mariadb-private) and msgqd
// processes ($MSGQD), started by the test itself and cleaned up at the end
// (also when the test fails or the process exits).
//
//   const env = await Env.start();                 // MariaDB, database msgq
//   await env.sql(messageTableDdl('t1', { vt_ack_wait: 2 }));
//   const server = await env.msgqd(['--databases=msgq']);
//   ...
//   await env.stop();                              // in after()

const { spawn, execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const mysql = require('mysql2/promise');

const REPO = process.env.MSGQ_SOURCE_DIR ||
  path.resolve(__dirname, '..', '..', '..');
const MSGQD = process.env.MSGQD || path.join(REPO, 'build', 'server', 'msgqd');

const children = new Set();
process.on('exit', () => {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch { /* gone */ }
  }
});

function run(file, args, options = {}) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 60000, ...options }, (err, stdout, stderr) => {
      if (err) {
        err.message += `\nstdout: ${stdout}\nstderr: ${stderr}`;
        reject(err);
      } else {
        resolve({ stdout, stderr });
      }
    });
  });
}

// The comment of a message table: test defaults, `overrides` replace or add
// directives (as tests/test_env.cc MessageComment).
function messageComment(overrides = {}) {
  const d = {
    vt_ack_wait: 30, vt_purge_after: 86400, vt_batch_size: 10,
    vt_cache_size: 10000, vt_poller_interval: 30, ...overrides,
  };
  return 'vitess_message,' + Object.entries(d).map(([k, v]) => `${k}=${v}`).join(',');
}

// CREATE TABLE of message table `db`.`name` with the dead-letter columns
// (time_created, time_dead, last_error) and `extra` column definitions.
function messageTableDdl(name, overrides = {}, extra = [], db = 'msgq') {
  const cols = [
    'id bigint NOT NULL',
    'priority tinyint NOT NULL DEFAULT 50',
    'epoch bigint NOT NULL DEFAULT 0',
    'time_next bigint DEFAULT 0',
    'time_acked bigint DEFAULT NULL',
    'message json',
    'time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000)',
    'time_dead bigint DEFAULT NULL',
    'last_error varchar(1024) DEFAULT NULL',
    ...extra,
    'PRIMARY KEY (id)',
    'INDEX poller_idx (time_acked, priority, time_next)',
  ];
  return `CREATE TABLE \`${db}\`.\`${name}\` (${cols.join(', ')}) COMMENT '${messageComment(overrides)}'`;
}

class Msgqd {
  constructor(proc, address, logRef) {
    this.proc = proc;
    this.address = address;
    this.port = Number(address.slice(address.lastIndexOf(':') + 1));
    this._log = logRef;
    this.exited = new Promise((resolve) => proc.once('exit', resolve));
  }

  log() { return this._log.text; }

  // Starts msgqd with `args` (after the test defaults) and waits for its
  // "msgqd listening on HOST:PORT" line.
  static async start(socket, args = [], { timeoutMs = 30000 } = {}) {
    const argv = [
      `--mysql_socket=${socket}`, '--listen=127.0.0.1:0',
      '--mysql_protocol_listen=', '--http_listen=',
      '--schema_reload_interval=200ms', ...args,
    ];
    const proc = spawn(MSGQD, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    proc.once('exit', () => children.delete(proc));
    const logRef = { text: '' };
    const onChunk = (chunk) => { logRef.text += chunk.toString(); };
    proc.stdout.on('data', onChunk);
    proc.stderr.on('data', onChunk);
    const deadline = Date.now() + timeoutMs;
    const marker = 'msgqd listening on ';
    for (;;) {
      const at = logRef.text.indexOf(marker);
      if (at >= 0) {
        const eol = logRef.text.indexOf('\n', at);
        if (eol >= 0) {
          return new Msgqd(proc, logRef.text.slice(at + marker.length, eol).trim(), logRef);
        }
      }
      if (proc.exitCode !== null || proc.signalCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`msgqd did not start listening: ${argv.join(' ')}\n${logRef.text.slice(-3000)}`);
      }
      await sleep(20);
    }
  }

  async stop(signal = 'SIGTERM') {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill(signal);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 15000);
    await this.exited;
    clearTimeout(timer);
  }

  kill() { return this.stop('SIGKILL'); }
}

class Env {
  constructor(dir, socket, port) {
    this.dir = dir;
    this.socket = socket;
    this.port = port;
    this.servers = [];
    this.tempDirs = [];
    this.conn = null;
  }

  // A private MariaDB (binlog on) with database `msgq` (and `databases`).
  static async start({ databases = ['msgq'] } = {}) {
    if (!fs.existsSync(MSGQD)) throw new Error(`no msgqd at ${MSGQD} (set MSGQD)`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'msgq-node-db-'));
    let out;
    try {
      out = await run(path.join(REPO, 'tools', 'mariadb-private'),
                      ['start', dir, `--owner-pid=${process.pid}`]);
    } catch (e) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    const socket = /MSGQ_MYSQL_SOCKET=(\S+)/.exec(out.stdout)[1];
    const port = Number(/MSGQ_MYSQL_PORT=(\d+)/.exec(out.stdout)[1]);
    const env = new Env(dir, socket, port);
    try {
      env.conn = await env.connect();
      for (const db of databases) await env.sql(`CREATE DATABASE \`${db}\``);
    } catch (e) {
      await env.stop().catch(() => {});
      throw e;
    }
    return env;
  }

  // A new mysql2 connection (promise API) as root over the socket.
  connect(database) {
    return mysql.createConnection({
      socketPath: this.socket, user: 'root', database,
      supportBigNumbers: true, bigNumberStrings: true,
    });
  }

  async sql(statement, params) {
    const [rows] = await this.conn.query(statement, params);
    return rows;
  }

  async msgqd(args = [], options) {
    const server = await Msgqd.start(this.socket, args, options);
    this.servers.push(server);
    return server;
  }

  tempDir(prefix = 'msgq-node-') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    this.tempDirs.push(dir);
    return dir;
  }

  async stop() {
    await Promise.all(this.servers.map((s) => s.stop('SIGKILL').catch(() => {})));
    if (this.conn) await this.conn.end().catch(() => {});
    try {
      await run(path.join(REPO, 'tools', 'mariadb-private'), ['stop', this.dir, '--kill']);
    } finally {
      fs.rmSync(this.dir, { recursive: true, force: true });
      for (const d of this.tempDirs) fs.rmSync(d, { recursive: true, force: true });
    }
  }
}

// Resolves once `predicate()` (sync or async) is truthy; throws after
// `timeoutMs` with `what`.
async function eventually(predicate, { timeoutMs = 20000, intervalMs = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let value;
    try {
      value = await predicate();
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

// Waits until `client` lists `name` (in `keyspace`) as loaded.
function waitForTable(client, name, keyspace = 'msgq') {
  return eventually(async () => {
    const tables = await client.listTables();
    return tables.some((t) => t.name === name && t.keyspace === keyspace && t.loaded);
  }, { what: `table ${keyspace}.${name} loaded` });
}

// Certificates as tests/security_fixture.h MakeTestCertificates: ca.pem
// signing server1 (CN msgqd-1, for IP 127.0.0.1 and localhost) and client
// "reader"; NAME.pem has NAME.key.
async function makeTestCertificates(dir) {
  fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  const sign = (name, cn, server) =>
    `openssl req -newkey rsa:2048 -nodes -keyout ${name}.key -out ${name}.csr -subj /CN=${cn} && ` +
    `openssl x509 -req -in ${name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out ${name}.pem -days 2` +
    (server ? ' -extfile san.ext' : '');
  const cmd = [
    'openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=msgq-test-ca',
    sign('server1', 'msgqd-1', true),
    sign('reader', 'reader', false),
  ].join(' && ');
  await run('/bin/sh', ['-c', `(${cmd}) >openssl.log 2>&1`], { cwd: dir });
}

// "sha256hex principal\n", a line of msgqd's --auth_tokens_file.
function tokenLine(token, principal) {
  const hash = require('node:crypto').createHash('sha256').update(token).digest('hex');
  return `${hash} ${principal}\n`;
}

module.exports = {
  Env, Msgqd, MSGQD, REPO, messageTableDdl, messageComment, eventually,
  waitForTable, makeTestCertificates, tokenLine, sleep,
};
