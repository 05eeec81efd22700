'use strict';
// Subscriber: receives the messages of one table from one or several msgqd
// servers and hands each to an async handler, settling it by the handler's
// answer (see results.js):
//
//   const sub = new Subscriber({
//     servers: ['db1:15999', 'db2:15999'], table: 'orders',
//     handler: async (msg) => {
//       if (msg.get('message') === null) return dead('NULL message');
//       await process(msg.json('message'));   // a throw retries it
//       return ack();
//     },
//     concurrency: 4,
//   }).start();
//   ...
//   await sub.close();
//
// Or without a handler, as an async iterable (it starts itself):
//
//   const sub = new Subscriber({ servers: 'db1:15999', table: 'orders',
//                                signal: controller.signal });
//   for await (const msg of sub) {
//     if (msg.get('message') === null) { sub.settle(msg, dead('NULL')); continue; }
//     await process(msg.json('message'));  // acked when the loop moves on
//   }
//
// Semantics (as the C++ Subscriber, client/subscriber.h):
//   - Fan-in: one MessageStream per server, each reconnecting on its own;
//     every message is acked, nacked and extended on the server it came from
//     (msg.server): ids are unique only within a shard.
//   - ack(): the id joins the next ack batch of its server (one MessageAck
//     per ack.maxBatch ids or ack.maxDelay seconds). retry()/dead()/a throw:
//     one MessageNack at once (delay absent for a throw: the table's
//     backoff), awaited before that handler slot takes the next message.
//   - group: a consumer group of the table (docs/design/consumer-groups.md),
//     sent on each stream and on the acks and nacks of its messages ('' =
//     the default group). A group's deliveries get no heartbeat
//     (MessageExtend names no group); an unknown group is NOT_FOUND, fatal.
//   - concurrency: handlers running at once. prefetch: max_unacked of each
//     stream (0 = unlimited). queueCapacity: messages received and not yet
//     handled, all servers together; when full, reading pauses and gRPC flow
//     control pushes back on the servers.
//   - Heartbeat: while a handler runs, its delivery is extended every
//     heartbeat.fraction * ack wait by the ack wait, up to
//     heartbeat.maxExtension seconds past its first deadline (0 disables).
//     The ack wait comes from ListTables at each stream start unless
//     heartbeat.ackWait is given.
//   - Reconnects: a stream that ends with a retryable error (UNAVAILABLE:
//     server shutting down or restarted, table reloaded, connection lost;
//     also DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNKNOWN,
//     CANCELLED) is reopened after a capped exponential backoff with jitter
//     (backoff: { initial 0.1, multiplier 2, max 5, jitter 0.2 } seconds),
//     reset when a stream starts. Other errors (NOT_FOUND,
//     FAILED_PRECONDITION, INVALID_ARGUMENT, UNAUTHENTICATED,
//     PERMISSION_DENIED, ...) and malformed responses from any server end the
//     whole subscription: it closes itself and wait() rejects with that
//     MsgqError (prefixed "server NAME: " with several servers).
//   - close(): stops taking messages (cancels the streams), hands messages
//     received but not yet started back at once (one MessageNack with delay
//     0 per server; releaseOnClose: false leaves them to time out instead,
//     as the C++ client does), waits for running handlers (and their
//     nacks), then sends the acks they produced and closes the channels.
//   - signal: an AbortSignal; its abort calls close() (an already aborted
//     signal: start() opens nothing). wait() then resolves, not rejects.
//   - Iteration (no handler): the loop takes one message at a time; up to
//     `concurrency` more wait for it, extended by the heartbeat. The loop's
//     message is settled by settle(msg, result) with a handler's result, or
//     acked when the loop asks for the next one. Leaving the loop (break,
//     return, a throw) retries an unsettled message with the table's
//     backoff and closes the subscriber. After close() (or an abort) the
//     loop ends once the subscriber has closed; after a fatal error it
//     throws that MsgqError. The tracing span of a message covers its time
//     in the loop but is not the active context of the loop's body.
//   - Tracing: see trace.js. With @opentelemetry/api loadable (and tracing
//     not false) each handled message gets a CONSUMER span "process TABLE"
//     from options.tracerProvider or the global provider: a child of the
//     producer's context from the message's traceparent/tracestate columns,
//     with a link to it as well (without them: a new root span). Attributes:
//     messaging.system "msgq", messaging.operation(.type/.name) "process",
//     messaging.destination.name TABLE, messaging.message.id, and
//     messaging.msgq.epoch (sends before this one, i.e. the redelivery
//     count), messaging.msgq.keyspace, server.address; at the end
//     messaging.msgq.outcome ack|retry|dead, status ERROR with the reason
//     for retry/dead/a throw (the exception recorded). The handler runs with
//     the span active, so its own spans are children of it.
// Delivery is at least once: a handler must tolerate seeing a message again.
// Durations are in seconds.

const { ServerStream } = require('./server_stream');
const { ack, retry, outcome, thrown } = require('./results');
const { MsgqError, invalidArgument, status } = require('./errors');
const { tableRef, tableString } = require('./wire');
const { tokenOf } = require('./channel');
const { loadOtel } = require('./trace');
const { checkSeconds } = require('./client');

const VERSION = require('../package.json').version;

// What an iterated subscriber's handler answers for a message the loop never
// took: hand it back (as close() does with unstarted messages).
const RELEASE = Symbol('release');

function parseServers(servers) {
  let list = servers;
  if (typeof list === 'string') list = list.split(',');
  if (!Array.isArray(list)) throw invalidArgument('servers: a list or "a:1,b:2"');
  const out = [];
  const names = new Set();
  for (const s of list) {
    let server;
    if (typeof s === 'string') {
      const t = s.trim();
      if (t === '') continue;
      server = { name: t, target: t };
    } else if (s && typeof s.target === 'string' && s.target !== '') {
      server = { name: s.name || s.target, target: s.target };
    } else {
      throw invalidArgument('a server is "host:port" or { name, target }');
    }
    if (names.has(server.name)) {
      throw invalidArgument(`server '${server.name}' given twice`);
    }
    names.add(server.name);
    out.push(server);
  }
  if (out.length === 0) throw invalidArgument('no servers');
  return out;
}

function positiveInt(value, what, min) {
  if (!Number.isInteger(value) || value < min) {
    throw invalidArgument(`${what} must be an integer >= ${min}, got ${value}`);
  }
  return value;
}

function normalize(options) {
  if (!options || typeof options !== 'object') {
    throw invalidArgument('new Subscriber({ servers, table, handler, ... })');
  }
  if (options.handler !== undefined && typeof options.handler !== 'function') {
    throw invalidArgument('handler must be a function (or absent, to iterate)');
  }
  const { signal } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalidArgument('signal must be an AbortSignal');
  }
  const heartbeat = { fraction: 0.5, maxExtension: 600, ackWait: 0,
                      ...(options.heartbeat || {}) };
  checkSeconds(heartbeat.maxExtension, 'heartbeat.maxExtension');
  checkSeconds(heartbeat.ackWait, 'heartbeat.ackWait');
  return Object.freeze({
    servers: parseServers(options.servers ?? options.server),
    table: tableRef(options.table, options.keyspace),
    group: String(options.group ?? ''),
    handler: options.handler ?? null,
    signal,
    concurrency: positiveInt(options.concurrency ?? 1, 'concurrency', 1),
    prefetch: positiveInt(options.prefetch ?? 0, 'prefetch', 0),
    queueCapacity: positiveInt(options.queueCapacity ?? 16, 'queueCapacity', 1),
    autoAck: options.autoAck ?? true,
    releaseOnClose: options.releaseOnClose ?? true,
    ack: { maxBatch: 100, maxDelay: 0.05, maxAttempts: 3, ...(options.ack || {}) },
    ackTimeout: checkSeconds(options.ackTimeout ?? 10, 'ackTimeout',
                             { positive: true }),
    heartbeat,
    backoff: { initial: 0.1, multiplier: 2, max: 5, jitter: 0.2,
               ...(options.backoff || {}) },
    retryInitialConnect: options.retryInitialConnect ?? true,
    tls: options.tls,
    token: tokenOf(options),
    channelOptions: options.channelOptions,
    tracing: options.tracing ?? true,
    tracerProvider: options.tracerProvider,
    onConnected: options.onConnected,
    onStreamError: options.onStreamError,
    onAckError: options.onAckError,
    onNackError: options.onNackError,
    onHeartbeatError: options.onHeartbeatError,
    onHandlerError: options.onHandlerError,
  });
}

class Subscriber {
  // See the file comment; options: { servers (or server), table, keyspace,
  // group, handler (absent: iterate the subscriber), signal, concurrency,
  // prefetch,
  // queueCapacity, autoAck, releaseOnClose, ack: { maxBatch, maxDelay,
  // maxAttempts }, ackTimeout, heartbeat: { fraction, maxExtension,
  // ackWait }, backoff: { initial, multiplier, max, jitter },
  // retryInitialConnect, tls, token, tokenFile, channelOptions, tracing,
  // tracerProvider, and the callbacks onConnected, onStreamError,
  // onAckError, onNackError, onHeartbeatError, onHandlerError }. Throws a
  // MsgqError (INVALID_ARGUMENT) for bad options.
  constructor(options) {
    this.options = normalize(options);
    this.table = this.options.table;
    this.handler = this.options.handler || ((message) => this._offer(message));
    this.offered = [];         // iteration: { message, resolve } for the loop
    this.takers = [];          // iteration: the loop waiting for a message
    this.current = null;       // iteration: the loop's unsettled message
    this.iterating = false;
    this.onAbort = null;
    this.queue = [];
    this.waiters = [];         // idle workers waiting for a message
    this.workers = [];
    this.running = 0;
    this.streams = [];
    this.started = false;
    this.stopRequested = false;
    this.fatal = null;
    this.closing = null;
    this.handled = 0;
    this.failed = 0;
    this.done = new Promise((resolve, reject) => {
      this._resolveDone = resolve;
      this._rejectDone = reject;
    });
    this.done.catch(() => {}); // rejections are for wait()'s callers
    this.tracer = null;
    this.otel = null;
    if (this.options.tracing) {
      const api = loadOtel();
      if (api) {
        this.otel = api;
        const provider = this.options.tracerProvider || api.trace.getTracerProvider();
        this.tracer = provider.getTracer('msgq', VERSION);
      }
    }
  }

  // Opens the streams and starts the handler slots. Returns this.
  start() {
    if (this.started || this.stopRequested) return this;
    const { signal } = this.options;
    if (signal) {
      if (signal.aborted) {
        this.close();
        return this;
      }
      this.onAbort = () => this.close();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
    this.started = true;
    const label = this.options.servers.length > 1;
    this.streams = this.options.servers.map(
      (server, i) => new ServerStream(this, i, server, label));
    for (let i = 0; i < this.options.concurrency; i++) {
      this.workers.push(this._work());
    }
    for (const stream of this.streams) {
      stream.start().then((err) => this._streamDone(err),
                          (err) => this._streamDone(err));
    }
    return this;
  }

  _streamDone(err) {
    if (!err || this.stopRequested || this.fatal) return;
    this.fatal = err instanceof MsgqError ? err
      : new MsgqError(status.UNKNOWN, String(err && err.message || err));
    this.close(); // one server's fatal error ends the subscription
  }

  // Resolves when the subscriber has closed (close() finished); rejects with
  // the MsgqError that ended the subscription when a server failed fatally.
  wait() {
    return this.done;
  }

  _full() {
    return this.queue.length >= this.options.queueCapacity;
  }

  // A stream hands a received message over; false when stopping.
  _push(item) {
    if (this.stopRequested) {
      this.queue.push(item); // handed back by close()
      return false;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.queue.push(item);
    return true;
  }

  _pop() {
    if (this.stopRequested) return Promise.resolve(null);
    if (this.queue.length > 0) {
      const item = this.queue.shift();
      if (!this._full()) for (const s of this.streams) s.resume();
      return Promise.resolve(item);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async _work() {
    for (;;) {
      const item = await this._pop();
      if (item === null) return;
      this.running++;
      try {
        await this._handle(item);
      } finally {
        this.running--;
      }
    }
  }

  _startSpan(message) {
    const api = this.otel;
    const tc = message.traceContext;
    let parent = api.ROOT_CONTEXT;
    if (tc) {
      const spanContext = {
        traceId: tc.traceId, spanId: tc.spanId, traceFlags: tc.traceFlags,
        isRemote: true,
      };
      if (tc.tracestate && typeof api.createTraceState === 'function') {
        spanContext.traceState = api.createTraceState(tc.tracestate);
      }
      parent = api.trace.setSpanContext(parent, spanContext);
    }
    const attributes = {
      'messaging.system': 'msgq',
      'messaging.operation': 'process',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': this.table.name,
      'messaging.message.id': message.id,
      'messaging.msgq.epoch': message.epoch,
    };
    if (this.table.keyspace) {
      attributes['messaging.msgq.keyspace'] = this.table.keyspace;
    }
    if (message.server) attributes['server.address'] = message.server;
    // Parent and link: the producer's context (one message per span, so
    // the semantic conventions allow the parent; the link is what they
    // require of consumer spans).
    const span = this.tracer.startSpan(`process ${this.table.name}`, {
      kind: api.SpanKind.CONSUMER, attributes,
      links: tc ? [{ context: api.trace.getSpanContext(parent) }] : [],
    }, parent);
    return { span, context: api.trace.setSpan(parent, span) };
  }

  _endSpan(span, result, error) {
    const api = this.otel;
    span.setAttribute('messaging.msgq.outcome', result.kind);
    if (error) span.recordException(error);
    if (result.kind !== 'ack') {
      span.setStatus({
        code: api.SpanStatusCode.ERROR,
        message: result.reason || result.kind,
      });
    }
    span.end();
  }

  async _handle({ message, at, origin }) {
    const ticket = origin.heartbeat.begin(message.delivery, at);
    const traced = this.tracer ? this._startSpan(message) : null;
    let result;
    let error = null;
    try {
      const value = traced
        ? await this.otel.context.with(traced.context, () => this.handler(message))
        : await this.handler(message);
      if (value === RELEASE) {
        origin.heartbeat.end(ticket);
        if (traced) traced.span.end();
        if (this.options.autoAck && this.options.releaseOnClose) {
          await origin.nack([message.delivery], { delay: 0 });
        }
        return;
      }
      result = outcome(value);
    } catch (e) {
      error = e;
      result = thrown(e);
      if (this.options.onHandlerError) {
        try { this.options.onHandlerError(e, message); } catch { /* ignore */ }
      }
    }
    origin.heartbeat.end(ticket);
    if (result.kind === 'ack') this.handled++;
    else this.failed++;
    if (traced) {
      try { this._endSpan(traced.span, result, error); } catch { /* ignore */ }
    }
    if (!this.options.autoAck) return;
    if (result.kind === 'ack') {
      origin.ack(message);
    } else {
      await origin.nack([message.delivery], {
        delay: result.kind === 'retry' ? result.delay : undefined,
        reason: result.reason,
        dead: result.kind === 'dead',
      });
    }
  }

  // The handler of an iterated subscriber: hands `message` to the loop and
  // resolves with its settlement (RELEASE when closed before the loop took
  // it).
  _offer(message) {
    if (this.stopRequested) return Promise.resolve(RELEASE);
    return new Promise((resolve) => {
      const item = { message, resolve };
      const taker = this.takers.shift();
      if (taker) taker(item);
      else this.offered.push(item);
    });
  }

  _take() {
    if (this.offered.length > 0) return Promise.resolve(this.offered.shift());
    if (this.stopRequested) return Promise.resolve(null);
    return new Promise((resolve) => this.takers.push(resolve));
  }

  // Settles the message the loop holds with a handler's result (ack(),
  // retry({ delay, reason }), dead(reason); a handler's return values are
  // taken too). Throws a MsgqError (FAILED_PRECONDITION) for a message the
  // loop does not hold: settled already, or not from this loop.
  settle(message, result = ack()) {
    if (!this.current || this.current.message !== message) {
      throw new MsgqError(status.FAILED_PRECONDITION,
        'settle(): not the message this subscriber\'s loop holds (settled already?)');
    }
    const { resolve } = this.current;
    this.current = null;
    resolve(outcome(result));
  }

  // Iteration: see the file comment. One loop at a time; starts the
  // subscriber. Throws a MsgqError (FAILED_PRECONDITION) for a subscriber
  // with a handler or one being iterated already.
  [Symbol.asyncIterator]() {
    if (this.options.handler) {
      throw new MsgqError(status.FAILED_PRECONDITION,
        'a Subscriber with a handler is not iterable: leave the handler out');
    }
    if (this.iterating) {
      throw new MsgqError(status.FAILED_PRECONDITION, 'this Subscriber is iterated already');
    }
    this.iterating = true;
    this.start();
    const next = async () => {
      if (this.current) this.settle(this.current.message, ack());
      const item = await this._take();
      if (item === null) {
        await this.close();
        if (this.fatal) throw this.fatal;
        return { done: true, value: undefined };
      }
      this.current = item;
      return { done: false, value: item.message };
    };
    const leave = async () => {
      if (this.current) {
        this.settle(this.current.message,
                    retry({ reason: 'the loop ended before settling it' }));
      }
      await this.close();
      return { done: true, value: undefined };
    };
    return { next, return: leave, [Symbol.asyncIterator]() { return this; } };
  }

  // Stops taking messages, hands unstarted ones back, waits for running
  // handlers, flushes the acks and closes the channels. Idempotent; resolves
  // once done (also after a fatal error: see wait()).
  close() {
    if (this.closing) return this.closing;
    this.stopRequested = true;
    if (this.onAbort) this.options.signal.removeEventListener('abort', this.onAbort);
    this.closing = (async () => {
      for (const s of this.streams) s.requestStop();
      for (const w of this.waiters.splice(0)) w(null);
      for (const t of this.takers.splice(0)) t(null);
      for (const { resolve } of this.offered.splice(0)) resolve(RELEASE);
      await Promise.all(this.workers);
      await Promise.all(this.streams.map((s) => s.loop));
      // Received, never started: hand them back now, per server.
      const unstarted = this.queue.splice(0);
      if (this.options.autoAck && this.options.releaseOnClose) {
        const byOrigin = new Map();
        for (const { message, origin } of unstarted) {
          if (!byOrigin.has(origin)) byOrigin.set(origin, []);
          byOrigin.get(origin).push(message.delivery);
        }
        await Promise.all([...byOrigin].map(
          ([origin, deliveries]) => origin.nack(deliveries, { delay: 0 })));
      }
      await Promise.all(this.streams.map((s) => s.close()));
    })();
    this.closing.then(() => {
      if (this.fatal) this._rejectDone(this.fatal);
      else this._resolveDone();
    }, (e) => this._rejectDone(this.fatal || e));
    return this.closing;
  }

  // Counters since start(), summed over the servers.
  stats() {
    const s = {
      received: 0, handled: this.handled, failed: this.failed, acked: 0,
      ackCalls: 0, retried: 0, dead: 0, nackCalls: 0, extended: 0, lost: 0,
      extendErrors: 0, streamsStarted: 0, reconnects: 0, running: this.running,
      queued: this.queue.length,
    };
    for (const stream of this.streams) {
      for (const k of Object.keys(stream.stats)) s[k] += stream.stats[k];
      s.extended += stream.heartbeat.stats.extended;
      s.lost += stream.heartbeat.stats.lost;
      s.extendErrors += stream.heartbeat.stats.errors;
    }
    return s;
  }

  toString() {
    return `Subscriber(${tableString(this.table)} on ${this.options.servers.map((s) => s.name).join(',')})`;
  }
}

// new Subscriber(options).start()
function subscribe(options) {
  return new Subscriber(options).start();
}

module.exports = { Subscriber, subscribe };
