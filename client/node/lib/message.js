'use strict';
// Message: one streamed row of a message table, decoded.
//
// MessageStream sends the table's columns (`fields`: name and
// information_schema DATA_TYPE) once, then rows packed as each column's
// text-protocol bytes back to back, with one length per column (-1 = NULL)
// and the delivery's epoch. A Message exposes:
//   id          the id (column 0) as text, what MessageAck takes;
//   idBytes     the same as a Buffer (exact even for binary ids);
//   epoch       sends of this message before this delivery (0 = first);
//   delivery    { id, epoch }: what MessageNack and MessageExtend take;
//   server      the server it came from (its ack/nack/extend go there);
//   columns     { name: value } of every column, typed (see below);
//   get(name)   one typed value (undefined when there is no such column);
//   raw(name)   its bytes (Buffer, null for NULL);
//   json(name)  the column parsed as JSON (null for NULL);
//   traceContext  the parsed `traceparent`/`tracestate` columns, or null.
//
// Typing by DATA_TYPE: NULL is null; tinyint..int, year, float, double,
// real are numbers; bigint a number when it fits exactly (|v| <= 2^53-1),
// else a BigInt; decimal/numeric stay strings (exact, as mysql2 does);
// binary, varbinary, the blob types, bit and the spatial types are Buffers;
// everything else (char, varchar, the text types, enum, set, json, date,
// time, datetime, timestamp, uuid, inet4/6, ...) is a string (UTF-8). The
// id stays text whatever its type. Immutable once built.

const { MsgqError, status } = require('./errors');
const { parseTraceparent } = require('./trace');

const NUMBER_TYPES = new Set([
  'tinyint', 'smallint', 'mediumint', 'int', 'integer', 'year', 'float',
  'double', 'real', 'double precision',
]);
const BUFFER_TYPES = new Set([
  'binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob', 'bit',
  'geometry', 'point', 'linestring', 'polygon', 'multipoint',
  'multilinestring', 'multipolygon', 'geometrycollection', 'geomcollection',
]);

// How a column of `type` is typed: 'number', 'bigint', 'buffer', 'string'.
function kindOf(type) {
  const t = String(type || '').toLowerCase();
  if (t === 'bigint') return 'bigint';
  if (NUMBER_TYPES.has(t)) return 'number';
  if (BUFFER_TYPES.has(t)) return 'buffer';
  return 'string';
}

function typed(kind, buf) {
  if (buf === null) return null;
  switch (kind) {
    case 'number': {
      const n = Number(buf.toString('latin1'));
      return Number.isNaN(n) ? buf.toString('utf8') : n;
    }
    case 'bigint': {
      const s = buf.toString('latin1');
      if (!/^-?\d+$/.test(s)) return s;
      const n = Number(s);
      return Number.isSafeInteger(n) ? n : BigInt(s);
    }
    case 'buffer':
      return buf;
    default:
      return buf.toString('utf8');
  }
}

// The columns of a stream, from its first response's `fields`.
class Schema {
  constructor(fields) {
    if (!Array.isArray(fields) || fields.length === 0) {
      throw new MsgqError(status.INTERNAL,
                          'bad first response from server: no fields');
    }
    this.fields = Object.freeze(fields.map((f, i) => {
      if (!f.name) {
        throw new MsgqError(status.INTERNAL,
                            `bad first response from server: column ${i} has no name`);
      }
      return Object.freeze({ name: f.name, type: f.type, kind: kindOf(f.type) });
    }));
    this.index = new Map();
    this.fields.forEach((f, i) => {
      if (!this.index.has(f.name)) this.index.set(f.name, i);
    });
    this.traceparentIndex = this.index.get('traceparent');
    this.tracestateIndex = this.index.get('tracestate');
    Object.freeze(this);
  }
}

function malformed(text) {
  return new MsgqError(status.INTERNAL, `malformed row: ${text}`);
}

// Splits a packed Row into Buffers (null for NULL). Throws an INTERNAL
// MsgqError when the row breaks the protocol.
function splitRow(schema, row) {
  const lengths = row.lengths || [];
  const values = row.values || Buffer.alloc(0);
  if (lengths.length !== schema.fields.length) {
    throw malformed(`${lengths.length} lengths for ${schema.fields.length} columns`);
  }
  const out = new Array(lengths.length);
  let offset = 0;
  for (let i = 0; i < lengths.length; i++) {
    const length = Number(lengths[i]);
    if (!Number.isInteger(length) || length < -1) {
      throw malformed(`column ${i} has length ${lengths[i]}`);
    }
    if (length === -1) {
      out[i] = null;
      continue;
    }
    if (offset + length > values.length) {
      throw malformed(`column ${i} overruns the ${values.length} value bytes`);
    }
    out[i] = values.subarray(offset, offset + length);
    offset += length;
  }
  if (offset !== values.length) {
    throw malformed(`lengths add up to ${offset} but values has ${values.length} bytes`);
  }
  if (out[0] === null) throw malformed('the id (column 0) is NULL');
  return out;
}

class Message {
  // `row`: a decoded msgq.v1.Row ({ lengths, values, epoch }).
  constructor(schema, row, server = '') {
    const values = splitRow(schema, row);
    const epoch = Number(row.epoch || 0);
    if (!Number.isSafeInteger(epoch) || epoch < 0) {
      throw malformed(`bad epoch ${row.epoch}`);
    }
    this.schema = schema;
    this.idBytes = Buffer.from(values[0]);
    this.id = this.idBytes.toString('utf8');
    this.epoch = epoch;
    this.server = server;
    // The id as text when that round-trips exactly, else the Buffer.
    const idForCalls = Buffer.from(this.id, 'utf8').equals(this.idBytes)
      ? this.id : this.idBytes;
    this.delivery = Object.freeze({ id: idForCalls, epoch });
    this._raw = values;
    const columns = {};
    schema.fields.forEach((f, i) => {
      if (!(f.name in columns)) {
        columns[f.name] = i === 0 ? this.id : typed(f.kind, values[i]);
      }
    });
    this.columns = Object.freeze(columns);
    const tp = schema.traceparentIndex;
    const ts = schema.tracestateIndex;
    this.traceContext = tp === undefined || values[tp] === null ? null
      : parseTraceparent(values[tp].toString('latin1'),
                         ts === undefined || values[ts] === null ? null
                           : values[ts].toString('utf8'));
    Object.freeze(this);
  }

  get fields() { return this.schema.fields; }

  has(name) { return this.schema.index.has(name); }

  // The typed value of column `name`; undefined when there is none.
  get(name) {
    return this.has(name) ? this.columns[name] : undefined;
  }

  // The bytes of column `name` (null for NULL); undefined when there is none.
  raw(name) {
    const i = this.schema.index.get(name);
    return i === undefined ? undefined : this._raw[i];
  }

  // Column `name` parsed as JSON (null for NULL). Throws SyntaxError for
  // text that is not JSON, and Error when there is no such column.
  json(name) {
    const b = this.raw(name);
    if (b === undefined) throw new Error(`no column ${name}`);
    return b === null ? null : JSON.parse(b.toString('utf8'));
  }

  toJSON() {
    const columns = {};
    for (const [k, v] of Object.entries(this.columns)) {
      columns[k] = typeof v === 'bigint' ? v.toString()
        : Buffer.isBuffer(v) ? v.toString('base64') : v;
    }
    return { id: this.id, epoch: this.epoch, server: this.server, columns };
  }
}

module.exports = { Message, Schema, splitRow, kindOf };
