'use strict';
// ServerStream: a Subscriber's connection to one server (internal; use
// Subscriber). Keeps one MessageStream of the table open, reopening it after
// a capped, jittered backoff when it ends with a retryable error, and hands
// every decoded message to the Subscriber. It also owns what settles the
// messages it received: a Client (its own channel), an AckBatcher and a
// Heartbeat, so a message's ack, nack and extends go to the server that sent
// it and to no other (ids are unique only within one shard).

const { Client } = require('./client');
const { AckBatcher } = require('./ack_batcher');
const { Heartbeat, monotonicSeconds } = require('./heartbeat');
const { Backoff } = require('./backoff');
const { Message, Schema } = require('./message');
const {
  MsgqError, fromGrpcError, status, RETRYABLE_STREAM,
} = require('./errors');
const { tableFields } = require('./wire');

function call(fn, ...args) {
  if (!fn) return;
  try {
    fn(...args);
  } catch {
    // Callbacks must not break the subscriber.
  }
}

class ServerStream {
  // server: { name, target }; sub: the Subscriber (push, resumeWanted,
  // options, table, stats counters).
  constructor(sub, index, server, label) {
    const o = sub.options;
    this.sub = sub;
    this.index = index;
    this.name = server.name;
    this.target = server.target;
    this.label = label ? server.name : '';
    this.table = sub.table;
    this.client = new Client(server.target, {
      tls: o.tls, token: o.token, timeout: o.ackTimeout,
      channelOptions: o.channelOptions, serverLabel: this.label,
    });
    this.batcher = new AckBatcher(o.ack, (ids) => this._sendAcks(ids),
                                  (err) => call(o.onAckError, err));
    this.heartbeat = new Heartbeat(
      o.autoAck && !o.group ? o.heartbeat : { maxExtension: 0 },
      (delivery, seconds) => this.client.extend(this.table, [delivery], seconds),
      (err) => call(o.onHeartbeatError, err));
    this.backoff = new Backoff(o.backoff);
    this.stopRequested = false;
    this.call = null;          // the open MessageStream call
    this.paused = false;
    this.sleepTimer = null;
    this.wakeSleep = null;
    this.loop = null;          // promise: null (stopped) or the fatal error
    this.stats = {
      received: 0, acked: 0, ackCalls: 0, retried: 0, dead: 0, nackCalls: 0,
      streamsStarted: 0, reconnects: 0,
    };
  }

  start() {
    this.loop = this._run();
    return this.loop;
  }

  _label(err) {
    return fromGrpcError(err, this.label);
  }

  async _run() {
    const o = this.sub.options;
    let everStarted = false;
    while (!this.stopRequested) {
      const end = await this._stream();
      if (this.stopRequested) break;
      if (end.started) {
        everStarted = true;
        this.backoff.reset();
      }
      const err = end.error || new MsgqError(status.UNAVAILABLE, 'stream ended by server');
      const retry = !end.protocolError && RETRYABLE_STREAM.has(err.code) &&
        (everStarted || o.retryInitialConnect);
      if (!retry) {
        return this._label(end.error ||
          new MsgqError(status.INTERNAL, 'stream ended without error'));
      }
      const delay = this.backoff.next();
      this.stats.reconnects++;
      call(o.onStreamError, this._label(err), delay);
      await this._sleep(delay);
    }
    return null;
  }

  _sleep(seconds) {
    return new Promise((resolve) => {
      this.wakeSleep = resolve;
      this.sleepTimer = setTimeout(resolve, seconds * 1000);
    }).finally(() => {
      clearTimeout(this.sleepTimer);
      this.sleepTimer = null;
      this.wakeSleep = null;
    });
  }

  // Runs one MessageStream to its end: { error, started, protocolError }.
  _stream() {
    const o = this.sub.options;
    return new Promise((resolve) => {
      const end = { error: null, started: false, protocolError: false };
      let schema = null;
      let finished = false;
      const c = this.client.stub.MessageStream(
        { ...tableFields(this.table), maxUnacked: o.prefetch, group: o.group },
        this.client.metadata());
      this.call = c;
      this.paused = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        this.call = null;
        this.paused = false;
        resolve(end);
      };
      const onData = (response) => {
        if (finished || end.protocolError) return;
        try {
          if (schema === null) {
            schema = new Schema(response.fields);
            end.started = true;
            this.stats.streamsStarted++;
            this._learnAckWait();
            call(o.onConnected, this.name, schema.fields);
          }
          const at = monotonicSeconds();
          for (const row of response.rows) {
            const message = new Message(schema, row, this.name);
            this.stats.received++;
            if (!this.sub._push({ message, at, origin: this })) {
              // Stopping: the subscriber hands it back.
            }
          }
        } catch (e) {
          end.error = e instanceof MsgqError ? e
            : new MsgqError(status.INTERNAL, String(e && e.message || e));
          end.protocolError = true;
          c.cancel();
          finish();
          return;
        }
        if (this.sub._full() && !this.paused) {
          this.paused = true;
          c.pause();
        }
      };
      c.on('data', onData);
      c.on('error', () => { /* reported by 'status' */ });
      c.on('status', (s) => {
        // Messages already received but still buffered (while paused) are
        // valid deliveries: take them before ending. read() emits 'data'
        // for each, which calls onData.
        if (!this.stopRequested) {
          while (!end.protocolError && !finished && c.read() !== null) {
            // onData ran
          }
        }
        if (!end.protocolError) {
          end.error = s.code === status.OK ? null
            : fromGrpcError({ code: s.code, details: s.details, metadata: s.metadata });
        }
        finish();
      });
    });
  }

  // Resumes reading after the subscriber's queue made room.
  resume() {
    if (this.paused && this.call) {
      this.paused = false;
      this.call.resume();
    }
  }

  _learnAckWait() {
    const o = this.sub.options;
    if (!this.heartbeat.enabled || (o.heartbeat.ackWait || 0) > 0) return;
    const ref = this.table;
    this.client.listTables().then((tables) => {
      const t = tables.find((x) => x.loaded && x.name === ref.name &&
        (!ref.keyspace || x.keyspace === ref.keyspace));
      const ackWait = t && t.settings ? t.settings.ackWait : 0;
      if (ackWait > 0) {
        this.heartbeat.setAckWait(ackWait);
      } else {
        call(o.onHeartbeatError, new MsgqError(status.NOT_FOUND,
          `ListTables has no loaded table ${ref.keyspace ? ref.keyspace + '.' : ''}${ref.name} ` +
          'with an ack_wait; not extending deliveries', { server: this.label }));
      }
    }, (err) => call(o.onHeartbeatError, err));
  }

  async _sendAcks(ids) {
    const acked = await this.client.ack(this.table, ids,
                                        { group: this.sub.options.group });
    this.stats.ackCalls++;
    this.stats.acked += acked;
  }

  ack(message) {
    this.batcher.add(message.idBytes);
  }

  // Nacks deliveries at once; a failure goes to onNackError (not retried:
  // the deliveries time out after the ack wait and are sent again anyway).
  async nack(deliveries, params) {
    try {
      const r = await this.client.nack(this.table, deliveries,
                                       { ...params, group: this.sub.options.group });
      this.stats.nackCalls++;
      this.stats.retried += r.retried;
      this.stats.dead += r.dead;
    } catch (err) {
      call(this.sub.options.onNackError, err);
    }
  }

  // Stops the stream loop (never waits for I/O). Idempotent.
  requestStop() {
    this.stopRequested = true;
    if (this.call) this.call.cancel();
    if (this.wakeSleep) this.wakeSleep();
  }

  // After the workers are done: stops the heartbeat, flushes acks, closes
  // the channel.
  async close() {
    await this.heartbeat.close();
    await this.batcher.close();
    this.client.close();
  }
}

module.exports = { ServerStream };
