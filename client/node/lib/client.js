'use strict';
// Client: the unary calls of msgq.v1.Messaging (settling messages, dead
// letters, listing and pausing tables). For receiving, see Subscriber.
//
//   const client = new Client('127.0.0.1:15999', { tls: { caFile }, token });
//   await client.ack('orders', ['17', '18']);                 // -> acked
//   await client.nack('orders', [msg.delivery], { delay: 30, reason: 'down' });
//   await client.listDead({ keyspace: 'app', name: 'orders' }, { limit: 50 });
//   client.close();
//
// Durations are seconds (numbers, fractions allowed), as in the proto and
// the table comments. Every call has a deadline (options.timeout, default
// 10 s) and fails fast while the server is down (UNAVAILABLE). Failures are
// MsgqErrors carrying the gRPC status code (see errors.js).

const grpc = require('@grpc/grpc-js');
const proto = require('./proto');
const {
  CHANNEL_OPTIONS, channelCredentials, tokenOf, metadataFactory,
} = require('./channel');
const { fromGrpcError, invalidArgument } = require('./errors');
const {
  bytes, tableRef, tableFields, deliveryField, int64Number, int64BigInt,
} = require('./wire');

function checkSeconds(value, what, { positive = false } = {}) {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw invalidArgument(`${what} must be a finite number of seconds`);
  }
  if (positive ? value <= 0 : value < 0) {
    throw invalidArgument(`${what} must be ${positive ? '> 0' : '>= 0'}, got ${value}`);
  }
  return value;
}

function deadMessage(m) {
  return {
    id: m.id.toString('utf8'),
    idBytes: m.id,
    epoch: int64Number(m.epoch),
    lastError: m.lastError,
    timeDead: int64BigInt(m.timeDead),
    timeCreated: int64BigInt(m.timeCreated),
  };
}

const TABLE_COUNTERS = [
  'cached', 'inFlight', 'dead', 'sent', 'redelivered', 'postponed', 'acked',
  'nacked', 'died', 'purged', 'polls',
];

function tableStatus(t) {
  const out = { ...t };
  for (const k of TABLE_COUNTERS) out[k] = int64Number(t[k]);
  if (t.ownership) {
    out.ownership = {
      ...t.ownership,
      since: int64BigInt(t.ownership.since),
      expires: int64BigInt(t.ownership.expires),
    };
  }
  return out;
}

class Client {
  // `target`: "host:port". options: { tls, token, tokenFile, timeout
  // (seconds, default 10), channelOptions (extra grpc-js channel options) }.
  // Does not connect here.
  constructor(target, options = {}) {
    if (typeof target !== 'string' || target === '') {
      throw invalidArgument('empty target');
    }
    this.target = target;
    this.timeout = checkSeconds(options.timeout ?? 10, 'timeout',
                                { positive: true });
    const { credentials, options: tlsOptions } = channelCredentials(options.tls);
    this._metadata = metadataFactory(tokenOf(options));
    const { Messaging } = proto.load();
    this._stub = new Messaging(target, credentials, {
      ...CHANNEL_OPTIONS, ...tlsOptions, ...(options.channelOptions || {}),
    });
    this._server = options.serverLabel || '';
  }

  // The grpc-js client underneath (for MessageStream, see ServerStream).
  get stub() { return this._stub; }

  // Fresh call metadata (the authorization header, if any).
  metadata() { return this._metadata(); }

  _call(method, request) {
    return new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + this.timeout * 1000);
      this._stub[method](request, this._metadata(), { deadline },
                         (err, response) => {
        if (err) reject(fromGrpcError(err, this._server));
        else resolve(response);
      });
    });
  }

  // Acknowledges ids (strings, Buffers or numbers: the text form of column
  // 0). Resolves to the rows that went from unacked to acked; unknown and
  // already-acked ids count 0. No call for an empty list.
  async ack(table, ids, { group = '' } = {}) {
    const ref = tableRef(table);
    const list = Array.from(ids || [], bytes);
    if (list.length === 0) return 0;
    const r = await this._call('MessageAck',
                               { ...tableFields(ref), ids: list, group: String(group) });
    return int64Number(r.acked);
  }

  // Hands deliveries ({ id, epoch }, e.g. msg.delivery) back: retried after
  // `delay` seconds (0 = as soon as possible; undefined = the table's backoff
  // for the message's epoch), or with `dead: true` dead at once. `reason`
  // goes to the row's last_error. Resolves to { retried, dead }.
  async nack(table, deliveries, { delay, reason = '', dead = false, group = '' } = {}) {
    const ref = tableRef(table);
    const list = Array.from(deliveries || [], deliveryField);
    if (delay !== undefined && delay !== null) checkSeconds(delay, 'delay');
    if (list.length === 0) return { retried: 0, dead: 0 };
    const request = {
      ...tableFields(ref), deliveries: list, reason: String(reason),
      dead: Boolean(dead), group: String(group),
    };
    if (delay !== undefined && delay !== null) request.delay = { value: delay };
    const r = await this._call('MessageNack', request);
    return { retried: int64Number(r.retried), dead: int64Number(r.dead) };
  }

  // Keeps deliveries from anyone else for `duration` seconds from now.
  // Resolves to how many moved (a delivery no longer held counts 0).
  async extend(table, deliveries, duration) {
    const ref = tableRef(table);
    const list = Array.from(deliveries || [], deliveryField);
    checkSeconds(duration, 'duration', { positive: true });
    if (list.length === 0) return 0;
    const r = await this._call('MessageExtend',
                               { ...tableFields(ref), deliveries: list, duration });
    return int64Number(r.extended);
  }

  // Makes the dead messages with `ids` due now with epoch 0. Resolves to how
  // many went from dead to due.
  async redrive(table, ids) {
    const ref = tableRef(table);
    const list = Array.from(ids || [], bytes);
    if (list.length === 0) return 0;
    const r = await this._call('Redrive', { ...tableFields(ref), ids: list });
    return int64Number(r.redriven);
  }

  // Redrives every dead message of `table`.
  async redriveAll(table) {
    const ref = tableRef(table);
    const r = await this._call('Redrive', { ...tableFields(ref), all: true });
    return int64Number(r.redriven);
  }

  // One page of dead messages, by id: at most `limit` (0 = 100, capped at
  // 10000) with ids after `afterId`. Each: { id, idBytes, epoch, lastError,
  // timeDead, timeCreated } (times: Unix ns as BigInt, 0n when unknown).
  async listDead(table, { limit = 0, afterId = '' } = {}) {
    const ref = tableRef(table);
    if (!Number.isInteger(limit) || limit < 0) {
      throw invalidArgument(`limit must be an integer >= 0, got ${limit}`);
    }
    const r = await this._call('ListDead', {
      ...tableFields(ref), limit, afterId: bytes(afterId),
    });
    return r.messages.map(deadMessage);
  }

  // Every message table of the server's databases: an array of
  // TableStatus objects (camelCase fields; settings in seconds; counters as
  // numbers; ownership.since/expires as BigInt ns). The binlog status and
  // the instance id are on the array as .binlog and .instance.
  async listTables() {
    const r = await this._call('ListTables', {});
    const tables = r.tables.map(tableStatus);
    if (r.binlog) {
      tables.binlog = {
        ...r.binlog,
        positionResets: int64Number(r.binlog.positionResets),
        evictions: int64Number(r.binlog.evictions),
      };
    }
    tables.instance = r.instance;
    return tables;
  }

  // Pauses (true) or resumes (false) sending `table` on every msgqd serving
  // it.
  async setPaused(table, paused) {
    const ref = tableRef(table);
    await this._call('SetPaused', { ...tableFields(ref), paused: Boolean(paused) });
  }

  // Closes the channel; pending calls fail.
  close() { this._stub.close(); }
}

module.exports = { Client, checkSeconds };
