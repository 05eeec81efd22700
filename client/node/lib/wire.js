'use strict';
// The one place where JS values become request fields. keyspace and name
// are proto `string`s and go as they are; ids and after_id are `bytes`:
// protobufjs would base64-decode a plain string given for a bytes field, so
// every such value goes through bytes().

const { invalidArgument } = require('./errors');

// A Buffer for `value`: Buffers as they are, strings as UTF-8, numbers and
// bigints in decimal (ids such as 17).
function bytes(value) {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (typeof value === 'number' || typeof value === 'bigint') {
    return Buffer.from(String(value), 'utf8');
  }
  throw invalidArgument(`expected a string or Buffer, got ${typeof value}`);
}

// A frozen { keyspace, name } for `table`: a name (taken as it is: table
// names may contain dots; `keyspace` defaults to "", the server's first
// database that has the table) or an object { keyspace?, name }.
function tableRef(table, keyspace) {
  let ref;
  if (typeof table === 'string') {
    ref = { keyspace: keyspace ?? '', name: table };
  } else if (table && typeof table === 'object' &&
             typeof table.name === 'string') {
    ref = { keyspace: table.keyspace ?? keyspace ?? '', name: table.name };
  } else {
    throw invalidArgument('a table is a name or { keyspace, name }');
  }
  if (ref.name === '') throw invalidArgument('empty table name');
  if (typeof ref.keyspace !== 'string') {
    throw invalidArgument('keyspace must be a string');
  }
  return Object.freeze(ref);
}

// The keyspace and name fields of a request about `ref`.
function tableFields(ref) {
  return { keyspace: ref.keyspace, name: ref.name };
}

// "keyspace.name", or "name" without a keyspace.
function tableString(ref) {
  return ref.keyspace ? `${ref.keyspace}.${ref.name}` : ref.name;
}

// A delivery as MessageNack/MessageExtend take it.
function deliveryField(d) {
  if (!d || d.id === undefined || d.id === null) {
    throw invalidArgument('a delivery is { id, epoch }');
  }
  const epoch = Number(d.epoch);
  if (!Number.isSafeInteger(epoch) || epoch < 0) {
    throw invalidArgument(`bad delivery epoch ${d.epoch}`);
  }
  return { id: bytes(d.id), epoch: String(epoch) };
}

// An int64 of a response (a decimal string with longs: String) as a number.
function int64Number(value) {
  if (value === undefined || value === null || value === '') return 0;
  return Number(value);
}

// An int64 of a response as a BigInt (Unix nanosecond times).
function int64BigInt(value) {
  if (value === undefined || value === null || value === '') return 0n;
  return BigInt(value);
}

module.exports = {
  bytes, tableRef, tableFields, tableString, deliveryField, int64Number,
  int64BigInt,
};
