'use strict';
// The package as a user gets it: `npm pack`, then `npm install --offline` of
// the tarball into a new application whose node_modules holds the
// dependencies installed from this package's lockfile (no registry). The
// installed package loads with require() and with import (the same
// objects), exports exactly EXPORTS (at run time, and in its types: tsc
// checks a CommonJS and an ES module file of the application), refuses deep
// imports of its internals and carries its own copy of the proto.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const PACKAGE_DIR = path.resolve(__dirname, '..', '..');
const TSC = path.join(PACKAGE_DIR, 'node_modules', 'typescript', 'bin', 'tsc');

const EXPORTS = [
  'Client', 'InboxError', 'Message', 'MsgqError', 'Schema', 'Subscriber', 'ack',
  'codeName', 'dead', 'enqueue', 'enqueueBatch', 'enqueueDedup', 'enqueueDedupBatch', 'formatTraceparent',
  'inboxHandler', 'outcome',
  'parseTraceparent', 'purgeInbox', 'readTokenFile', 'retry', 'status',
  'subscribe', 'traceColumns', 'traceparent', 'tracestate', 'version',
];

let tmp;
let app;

function run(file, args, cwd) {
  return execFileSync(file, args, { cwd, encoding: 'utf8', timeout: 120000,
                                    stdio: ['ignore', 'pipe', 'pipe'] });
}

test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'msgq-node-pack-'));
  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], PACKAGE_DIR)
    .replace(/^[^[]*/, '')); // prepack's own output comes first
  app = path.join(tmp, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'),
                   JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  // The dependencies `npm ci` installed from the lockfile, without the
  // compiler: what an offline install finds already in place.
  fs.cpSync(path.join(PACKAGE_DIR, 'node_modules'), path.join(app, 'node_modules'), {
    recursive: true,
    filter: (src) => !/node_modules[\\/](typescript|\.bin)$/.test(src),
  });
  run('npm', ['install', '--offline', '--no-audit', '--no-fund',
              path.join(tmp, packed.filename)], app);
});

test.after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

test('require(): the exports, no internals, the packed proto', () => {
  const out = JSON.parse(run('node', ['-e', `
    const msgq = require('msgq');
    let deep = null;
    try { require('msgq/lib/heartbeat'); } catch (e) { deep = e.code; }
    const client = new msgq.Client('127.0.0.1:1');  // loads the proto
    client.close();
    console.log(JSON.stringify({
      keys: Object.keys(msgq).sort(), deep, version: msgq.version,
      resolved: require.resolve('msgq'),
      proto: require('node:fs').existsSync(require.resolve('msgq/package.json')
        .replace(/package\\.json$/, 'proto/msgq/v1/messaging.proto')),
    }));`], app));
  assert.deepEqual(out.keys, EXPORTS.slice().sort());
  assert.equal(out.deep, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  assert.equal(out.version, require('../../package.json').version);
  assert.equal(out.resolved, path.join(fs.realpathSync(app), 'node_modules', 'msgq', 'lib', 'index.js'));
  assert.equal(out.proto, true);
});

test('import: the same names and the same objects as require()', () => {
  const out = JSON.parse(run('node', ['--input-type=module', '-e', `
    import * as ns from 'msgq';
    import msgq, { Subscriber, MsgqError, ack } from 'msgq';
    import { createRequire } from 'node:module';
    const cjs = createRequire(process.cwd() + '/')('msgq');
    console.log(JSON.stringify({
      keys: Object.keys(ns).filter((k) => k !== 'default').sort(),
      same: msgq === cjs && Subscriber === cjs.Subscriber && MsgqError === cjs.MsgqError &&
        ack === cjs.ack && Object.keys(cjs).every((k) => ns[k] === cjs[k]),
      resolved: import.meta.resolve('msgq'),
    }));`], app));
  assert.deepEqual(out.keys, EXPORTS.slice().sort());
  assert.equal(out.same, true);
  assert.equal(out.resolved, `file://${path.join(fs.realpathSync(app), 'node_modules', 'msgq', 'lib', 'index.mjs')}`);
});

test('types: the installed package declares exactly these values, both ways', () => {
  const all = EXPORTS.map((name) => `${name}: true`).join(', ');
  fs.writeFileSync(path.join(app, 'check.cts'), `import msgq = require('msgq');
const names: Record<keyof typeof msgq, true> = { ${all} };
export = names;
`);
  fs.writeFileSync(path.join(app, 'check.mts'), `import msgq, { ${EXPORTS.join(', ')} } from 'msgq';
const values: unknown[] = [${EXPORTS.join(', ')}];
const sub: InstanceType<typeof Subscriber> = new msgq.Subscriber({ servers: 'a:1', table: 't' });
export { values, sub };
`);
  // A clean run; a declared value missing at run time, or the reverse,
  // fails check.cts (missing or excess property).
  assert.equal(run('node', [TSC, '--strict', '--noEmit', '--module', 'node16',
                            '--target', 'es2022', '--types', 'node', 'check.cts', 'check.mts'], app), '');
  fs.writeFileSync(path.join(app, 'extra.cts'), `import msgq = require('msgq');
const names: Record<keyof typeof msgq, true> = { ${all}, Heartbeat: true };
export = names;
`);
  assert.throws(() => run('node', [TSC, '--strict', '--noEmit', '--module', 'node16',
                                   '--target', 'es2022', '--types', 'node', 'extra.cts'], app),
                (e) => /extra\.cts.*error TS2353: .*'Heartbeat' does not exist/.test(e.stdout));
});
