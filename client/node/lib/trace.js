'use strict';
// W3C Trace Context from producer to consumer.
//
// Convention: a message table may have a `traceparent` column (varchar(55))
// and optionally `tracestate` (varchar(512), say). The producer writes its
// current context there in the same INSERT that enqueues the message:
//
//   await conn.execute(
//     'INSERT INTO orders (id, message, traceparent, tracestate) VALUES (?, ?, ?, ?)',
//     [id, body, traceparent(), tracestate()]);
//
// and the subscriber parses it into msg.traceContext and, when
// @opentelemetry/api can be loaded, parents a CONSUMER span per handled
// message on it (see subscriber.js). Without @opentelemetry/api the helpers
// return null and nothing else changes.

const TRACEPARENT_RE =
  /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

let otel; // undefined: not tried yet; null: not installed

// The @opentelemetry/api module, or null when it cannot be loaded.
function loadOtel() {
  if (otel === undefined) {
    try {
      otel = require('@opentelemetry/api');
    } catch {
      otel = null;
    }
  }
  return otel;
}

// { traceparent, tracestate, traceId, spanId, traceFlags, sampled } for a
// traceparent header value (and an optional tracestate), or null when it is
// missing or not valid W3C Trace Context (version ff, all-zero ids, a
// version-00 value of another length...).
function parseTraceparent(traceparent, tracestate = null) {
  if (typeof traceparent !== 'string') return null;
  const value = traceparent.trim().toLowerCase();
  const m = TRACEPARENT_RE.exec(value);
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff') return null;
  if (version === '00' && rest !== undefined) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  const traceFlags = parseInt(flags, 16);
  return Object.freeze({
    traceparent: value,
    tracestate: typeof tracestate === 'string' && tracestate.trim() !== ''
      ? tracestate.trim() : null,
    traceId,
    spanId,
    traceFlags,
    sampled: (traceFlags & 1) === 1,
  });
}

// "00-<trace id>-<span id>-<flags>" for an OpenTelemetry SpanContext.
function formatTraceparent(spanContext) {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

function activeSpanContext(ctx) {
  const api = loadOtel();
  if (!api) return null;
  const sc = api.trace.getSpanContext(ctx || api.context.active());
  if (!sc || !api.isSpanContextValid(sc)) return null;
  return sc;
}

// The traceparent of `ctx` (default: the active OpenTelemetry context), for
// the INSERT that enqueues a message; null when there is no valid span or
// @opentelemetry/api is not installed.
function traceparent(ctx) {
  const sc = activeSpanContext(ctx);
  return sc ? formatTraceparent(sc) : null;
}

// The tracestate of `ctx` (default: the active context); null when empty,
// when there is no valid span, or without @opentelemetry/api.
function tracestate(ctx) {
  const sc = activeSpanContext(ctx);
  if (!sc || !sc.traceState) return null;
  const s = sc.traceState.serialize();
  return s === '' ? null : s;
}

// { traceparent, tracestate } of `ctx` (default: the active context).
function traceColumns(ctx) {
  return { traceparent: traceparent(ctx), tracestate: tracestate(ctx) };
}

module.exports = {
  loadOtel, parseTraceparent, formatTraceparent, traceparent, tracestate,
  traceColumns,
};
