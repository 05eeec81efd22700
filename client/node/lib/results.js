'use strict';
// What a Subscriber handler answers for one message:
//   ack()                          done: its id joins the next ack batch;
//   retry({ delay, reason })       not done: sent again after `delay`
//                                  seconds (0 = as soon as possible;
//                                  undefined = the table's backoff for the
//                                  message's epoch); `reason` goes to the
//                                  row's last_error;
//   dead(reason)                   never going to work: dead now.
// A handler that returns nothing (undefined) or true acks; false retries
// with the table's backoff; a thrown error (or rejected promise) retries
// with the table's backoff and the error's message as the reason. Results
// are frozen plain objects ({ kind, delay, reason }).

const ACK = Object.freeze({ kind: 'ack', delay: undefined, reason: '' });

function ack() {
  return ACK;
}

function retry({ delay, reason = '' } = {}) {
  if (delay !== undefined && delay !== null) {
    if (typeof delay !== 'number' || Number.isNaN(delay) || delay === Infinity) {
      throw new RangeError(`retry delay must be a finite number of seconds, got ${delay}`);
    }
    delay = Math.max(0, delay); // a negative delay means "now", as in C++
  } else {
    delay = undefined;
  }
  return Object.freeze({ kind: 'retry', delay, reason: String(reason) });
}

function dead(reason = '') {
  return Object.freeze({ kind: 'dead', delay: undefined, reason: String(reason) });
}

function isResult(value) {
  return value !== null && typeof value === 'object' &&
    (value.kind === 'ack' || value.kind === 'retry' || value.kind === 'dead');
}

// The ack/retry/dead result a handler's return value stands for.
function outcome(value) {
  if (value === undefined || value === true) return ACK;
  if (value === false) return retry();
  if (isResult(value)) return value;
  return retry({
    reason: `handler returned ${typeof value === 'object' ? JSON.stringify(value) : String(value)}; ` +
      'expected ack(), retry(...) or dead(...)',
  });
}

// The result of a handler that threw `err`.
function thrown(err) {
  const reason = err instanceof Error ? (err.message || err.name) : String(err);
  return retry({ reason });
}

module.exports = { ack, retry, dead, outcome, thrown, isResult };
