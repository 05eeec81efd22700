'use strict';
// Run as a child process by test/trace.test.js with @opentelemetry/api made
// unloadable: consumes one message of MSGQ_TABLE from MSGQ_SERVER, prints
// a JSON line with what it saw, and exits 0.
const Module = require('node:module');

const resolve = Module._resolveFilename;
Module._resolveFilename = function resolveWithoutOtel(request, ...rest) {
  if (request === '@opentelemetry/api' || request.startsWith('@opentelemetry/')) {
    const e = new Error(`Cannot find module '${request}'`);
    e.code = 'MODULE_NOT_FOUND';
    throw e;
  }
  return resolve.call(this, request, ...rest);
};

const msgq = require('..');

let otelLoadable = true;
try {
  require('@opentelemetry/api');
} catch {
  otelLoadable = false;
}

const sub = new msgq.Subscriber({
  servers: process.env.MSGQ_SERVER,
  table: process.env.MSGQ_TABLE,
  keyspace: 'msgq',
  handler: async (msg) => {
    console.log(JSON.stringify({
      otelLoadable,
      producerHelper: msgq.traceparent(),
      id: msg.id,
      traceContext: msg.traceContext,
    }));
    setImmediate(() => sub.close().then(() => process.exit(0)));
    return msgq.ack();
  },
}).start();
sub.wait().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
