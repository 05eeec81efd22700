'use strict';
// MsgqError: every failed call of this package, with the gRPC status code.
//
//   try { await client.ack('orders', ['17']); }
//   catch (e) {
//     if (e instanceof MsgqError && e.code === status.NOT_FOUND) ...
//   }
//
// `code` is a number of grpc.status (re-exported as `status`), `codeName`
// its name ("NOT_FOUND"), `details` the server's message unchanged. Errors
// the client finds itself before any call (a negative delay, an empty table
// name) are MsgqErrors with INVALID_ARGUMENT; malformed server responses are
// INTERNAL.

const grpc = require('@grpc/grpc-js');

const status = grpc.status;
const CODE_NAMES = Object.freeze(
  Object.fromEntries(Object.entries(status).map(([k, v]) => [v, k])));

function codeName(code) {
  return CODE_NAMES[code] || `CODE_${code}`;
}

class MsgqError extends Error {
  constructor(code, details, options = {}) {
    const prefix = options.server ? `server ${options.server}: ` : '';
    super(`${prefix}${codeName(code)}: ${details}`,
          options.cause ? { cause: options.cause } : undefined);
    this.name = 'MsgqError';
    this.code = code;
    this.codeName = codeName(code);
    this.details = details;
    this.server = options.server || '';
    this.metadata = options.metadata;
  }
}

// A MsgqError for `err`, an error of a grpc-js call (or anything thrown).
function fromGrpcError(err, server) {
  if (err instanceof MsgqError) {
    if (!server || err.server) return err;
    return new MsgqError(err.code, err.details,
                         { server, cause: err.cause, metadata: err.metadata });
  }
  if (err && typeof err.code === 'number') {
    return new MsgqError(err.code, err.details ?? err.message,
                         { server, metadata: err.metadata, cause: err });
  }
  return new MsgqError(status.UNKNOWN, String(err && err.message || err),
                       { server, cause: err });
}

function invalidArgument(details) {
  return new MsgqError(status.INVALID_ARGUMENT, details);
}

// Stream errors after which a subscriber reconnects (as the C++ client's
// IsRetryableStreamError): the server went away, restarted, reloaded the
// table, or the connection broke.
const RETRYABLE_STREAM = new Set([
  status.OK, status.UNAVAILABLE, status.DEADLINE_EXCEEDED,
  status.RESOURCE_EXHAUSTED, status.ABORTED, status.INTERNAL, status.UNKNOWN,
  status.CANCELLED,
]);

// MessageAck failures after which a batch is sent again (AckBatcher).
const RETRYABLE_ACK = new Set([
  status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.ABORTED,
  status.RESOURCE_EXHAUSTED,
]);

module.exports = {
  MsgqError, fromGrpcError, invalidArgument, codeName, status,
  RETRYABLE_STREAM, RETRYABLE_ACK,
};
