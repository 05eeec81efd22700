'use strict';
// Channels to msgqd: TLS (CA, client certificate and key), a bearer token,
// and the channel options the other msgq clients use.
//
// The token goes as the metadata `authorization: Bearer <token>` on every
// call (per-call metadata, so it is sent over plaintext channels too, as the
// C++ and Python clients do: keep plaintext to loopback).
//
// TLS options (all optional; any of them turns TLS on):
//   { ca, cert, key }          PEM Buffers or strings (the PEM text);
//   { caFile, certFile, keyFile }  paths of PEM files, read once;
//   serverName                 the name checked in the server's certificate
//                              (when connecting by an address it lacks).
// `tls: true` uses the system's roots.

const fs = require('node:fs');
const grpc = require('@grpc/grpc-js');
const { invalidArgument } = require('./errors');

// Reconnect within 100ms..5s instead of gRPC's 1s..120s, and a keepalive
// ping every 6 minutes on an idle connection (as client/client.h).
const CHANNEL_OPTIONS = Object.freeze({
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 5000,
  'grpc.keepalive_time_ms': 6 * 60 * 1000,
  'grpc.keepalive_timeout_ms': 20 * 1000,
});

function pem(value, file, what) {
  if (value !== undefined && value !== null && file) {
    throw invalidArgument(`give ${what} or ${what}File, not both`);
  }
  if (file) {
    try {
      return fs.readFileSync(file);
    } catch (e) {
      throw invalidArgument(`cannot read ${what} file ${file}: ${e.message}`);
    }
  }
  if (value === undefined || value === null) return null;
  return Buffer.isBuffer(value) ? value : Buffer.from(String(value));
}

// The channel credentials and extra channel options for `tls`.
function channelCredentials(tls) {
  if (!tls) return { credentials: grpc.credentials.createInsecure(), options: {} };
  const t = tls === true ? {} : tls;
  const ca = pem(t.ca, t.caFile, 'ca');
  const cert = pem(t.cert, t.certFile, 'cert');
  const key = pem(t.key, t.keyFile, 'key');
  if ((cert === null) !== (key === null)) {
    throw invalidArgument('a client certificate needs both cert and key');
  }
  const options = {};
  if (t.serverName) {
    options['grpc.ssl_target_name_override'] = t.serverName;
    options['grpc.default_authority'] = t.serverName;
  }
  return { credentials: grpc.credentials.createSsl(ca, key, cert), options };
}

// The token in `path`: its first line without surrounding whitespace.
function readTokenFile(path) {
  let text;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw invalidArgument(`cannot read token file ${path}: ${e.message}`);
  }
  const token = text.split('\n', 1)[0].trim();
  if (!token) throw invalidArgument(`token file ${path} is empty`);
  return token;
}

// The token of { token, tokenFile } ('' for none).
function tokenOf(options) {
  if (options.token && options.tokenFile) {
    throw invalidArgument('give token or tokenFile, not both');
  }
  const token = options.tokenFile ? readTokenFile(options.tokenFile)
                                  : (options.token || '');
  if (/[\r\n]/.test(token)) throw invalidArgument('a token must be one line');
  return token;
}

// A function returning fresh call metadata (with the token, if any).
function metadataFactory(token) {
  return () => {
    const md = new grpc.Metadata();
    if (token) md.set('authorization', `Bearer ${token}`);
    return md;
  };
}

module.exports = {
  CHANNEL_OPTIONS, channelCredentials, readTokenFile, tokenOf,
  metadataFactory,
};
