// @ts-check
'use strict';
// The consumer example of client/node/README.md#consumer, run as written
// (its servers and its application functions filled in) against a real
// MariaDB and msgqd: a permanent error (an unknown table) is printed and
// exits 1, and a server that is down is retried with a line per retry.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Env } = require('../testing/harness');

const readmeFile = path.join(__dirname, '..', 'README.md');

// The first js block after "## Consumer", with `servers` set to `servers`
// and require('msgq') pointed at this checkout.
function consumerExample(servers) {
  const text = fs.readFileSync(readmeFile, 'utf8');
  const section = text.slice(text.indexOf('## Consumer'));
  const block = section.slice(section.indexOf('```js\n') + 6,
                              section.indexOf('```', section.indexOf('```js\n') + 6));
  const code = block
      .replace("require('msgq')", `require(${JSON.stringify(path.join(__dirname, '..'))})`)
      .replace(/servers: \[[^\]]*\]/, `servers: ${JSON.stringify(servers)}`);
  assert.notEqual(code, block, 'the example has require and servers');
  return 'const backendUp = () => true;\nasync function ship() {}\n' + code;
}

// Runs `code` with node; resolves {code, stderr} when it exits, or when
// `until(stderr)` holds (then it is killed: code null).
function run(code, until = () => false) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'msgq-test-readme-')),
                         'consumer.js');
  fs.writeFileSync(file, code);
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.stderr.on('data', (d) => {
      stderr += d;
      if (until(stderr)) child.kill('SIGKILL');
    });
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
      resolve({ code: exitCode, stderr });
    });
  });
}

let env;
let server;

test.before(async () => {
  env = await Env.start();
  server = await env.msgqd(['--databases=msgq']);
});

test.after(async () => {
  if (env) await env.stop();
});

test('an unknown table is printed and exits 1', async () => {
  const { code, stderr } = await run(consumerExample([server.address]));
  assert.equal(code, 1);
  assert.equal(stderr,
      'msgq: NOT_FOUND: message table `order_events` not found in keyspaces msgq\n');
});

test('a server that is down is retried, a line per retry', async () => {
  const retries = /^msgq: UNAVAILABLE: .*; retrying in \d+\.\d s$/;
  const { code, stderr } = await run(consumerExample(['127.0.0.1:1']),
      (err) => err.split('\n').length > 3);
  assert.equal(code, null); // still running: killed by the test
  const lines = stderr.split('\n').filter((l) => l !== '');
  assert.ok(lines.length >= 3, stderr);
  for (const line of lines) assert.match(line, retries);
});
