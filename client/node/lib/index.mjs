// msgq as an ES module: the CommonJS entry point's exports, the very same
// objects, so a program that loads the package both ways has one Subscriber
// class and one MsgqError class.
//
//   import { Subscriber, ack } from 'msgq';
//
// Types: index.d.ts.

import msgq from './index.js';

export const {
  Subscriber, subscribe, Client, ack, retry, dead, outcome, Message, Schema,
  MsgqError, status, codeName, parseTraceparent, formatTraceparent,
  traceparent, tracestate, traceColumns, readTokenFile, inboxHandler,
  purgeInbox, InboxError, enqueue, enqueueBatch, enqueueDedup,
  enqueueDedupBatch, version,
} = msgq;

export default msgq;
