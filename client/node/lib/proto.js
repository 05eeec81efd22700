'use strict';
// Loads proto/msgq/v1/messaging.proto at run time with @grpc/proto-loader.
//
// Where the proto is looked for, first found wins:
//   1. $MSGQ_PROTO_DIR (a directory holding msgq/v1/messaging.proto);
//   2. proto/ inside this package (copied there by `npm pack`, see
//      scripts/copy-proto.js, so a packed tarball is self-contained);
//   3. the repository's proto/ (this package lives in client/node, so a
//      checkout, `npm install /path/to/repo/client/node` or `npm link` finds
//      it without a copy).
//
// Loader options: camelCase field names (ack_wait -> ackWait), 64-bit
// integers as decimal strings (converted by the callers: counts to numbers,
// Unix nanosecond times to BigInt), bytes as Buffers, enums as names,
// defaults filled in.

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_FILE = 'msgq/v1/messaging.proto';

const LOADER_OPTIONS = Object.freeze({
  keepCase: false,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
});

function protoDirCandidates() {
  const dirs = [];
  if (process.env.MSGQ_PROTO_DIR) dirs.push(process.env.MSGQ_PROTO_DIR);
  dirs.push(path.join(__dirname, '..', 'proto'));
  dirs.push(path.join(__dirname, '..', '..', '..', 'proto'));
  return dirs;
}

// The directory holding msgq/v1/messaging.proto. Throws when none has it.
function findProtoDir() {
  const tried = protoDirCandidates();
  for (const dir of tried) {
    if (fs.existsSync(path.join(dir, PROTO_FILE))) return dir;
  }
  throw new Error(
    `msgq: cannot find ${PROTO_FILE}; looked in ${tried.join(', ')} ` +
      '(set MSGQ_PROTO_DIR to the directory holding msgq/v1/)');
}

let cached = null;

// { Messaging: the service client constructor, definition: the package
//   definition, dir: where the proto was found }.
function load() {
  if (cached) return cached;
  const dir = findProtoDir();
  const definition = protoLoader.loadSync(PROTO_FILE, {
    ...LOADER_OPTIONS,
    includeDirs: [dir],
  });
  const pkg = grpc.loadPackageDefinition(definition);
  cached = { Messaging: pkg.msgq.v1.Messaging, definition, dir };
  return cached;
}

module.exports = { load, findProtoDir, PROTO_FILE };
