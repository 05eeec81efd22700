'use strict';
// msgq: the Node client of msgqd (gRPC API msgq.v1.Messaging).
//
//   const { Subscriber, ack, retry, dead } = require('msgq');
//   const sub = new Subscriber({
//     servers: '127.0.0.1:15999', table: 'orders',
//     handler: async (msg) => {
//       if (msg.get('message') === null) return dead('NULL message');
//       if (!backendUp()) return retry({ delay: 30, reason: 'backend down' });
//       await process(msg.json('message'));  // a throw retries it
//       return ack();
//     },
//   }).start();
//   process.on('SIGTERM', () => sub.close());
//
// Subscriber (subscriber.js), Client (client.js), the handler results
// (results.js), Message (message.js), trace context helpers (trace.js),
// MsgqError and the gRPC status codes (errors.js), the idempotent-consumer
// helper inboxHandler/purgeInbox (inbox.js, docs/effectively-once.md), the
// producer's enqueue/enqueueBatch in the application's transaction
// (producer.js).
// Types: index.d.ts. The ES module entry point (index.mjs) re-exports these.

const { Subscriber, subscribe } = require('./subscriber');
const { Client } = require('./client');
const { ack, retry, dead, outcome } = require('./results');
const { Message, Schema } = require('./message');
const { MsgqError, status, codeName } = require('./errors');
const {
  parseTraceparent, formatTraceparent, traceparent, tracestate, traceColumns,
} = require('./trace');
const { readTokenFile } = require('./channel');
const { inboxHandler, purgeInbox, InboxError } = require('./inbox');
const { enqueue, enqueueBatch, enqueueDedup, enqueueDedupBatch } = require('./producer');

module.exports = {
  Subscriber, subscribe, Client, ack, retry, dead, outcome, Message, Schema,
  MsgqError, status, codeName,
  parseTraceparent, formatTraceparent, traceparent, tracestate, traceColumns,
  readTokenFile, inboxHandler, purgeInbox, InboxError, enqueue, enqueueBatch,
  enqueueDedup, enqueueDedupBatch,
  version: require('../package.json').version,
};
