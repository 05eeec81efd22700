'use strict';
// AckBatcher: collects ids to acknowledge and sends them in batches (as
// client/ack_batcher.h): a batch goes as soon as `maxBatch` ids are pending,
// or `maxDelay` seconds after the oldest pending id was added, whichever
// comes first; close() sends what is left. One send at a time. A batch
// whose send fails with a retryable code (UNAVAILABLE, DEADLINE_EXCEEDED,
// ABORTED, RESOURCE_EXHAUSTED) is queued again, first, until its ids were
// tried `maxAttempts` times; other failures drop it. Every failure goes to
// onError. Dropped ids are not lost for good: the server sends an
// unacknowledged message again after the table's ack wait.

const { RETRYABLE_ACK } = require('./errors');

class AckBatcher {
  // send(ids) -> Promise (rejects with a MsgqError); onError(err) optional.
  constructor({ maxBatch = 100, maxDelay = 0.05, maxAttempts = 3 } = {},
              send, onError) {
    this.maxBatch = Math.max(1, maxBatch);
    this.maxDelayMs = Math.max(0, maxDelay * 1000);
    this.maxAttempts = Math.max(1, maxAttempts);
    this.send = send;
    this.onError = onError;
    this.pending = [];   // { id, attempts }
    this.oldest = 0;     // when pending[0]'s batch started waiting (ms)
    this.timer = null;
    this.sending = null; // the promise of the send in flight
    this.closing = false;
    this.closed = null;  // close()'s promise
  }

  // Queues `id`; false (dropping it) once close() has begun.
  add(id) {
    if (this.closing) return false;
    if (this.pending.length === 0) this.oldest = Date.now();
    this.pending.push({ id, attempts: 0 });
    this._schedule();
    return true;
  }

  _schedule() {
    if (this.sending || this.pending.length === 0) return;
    if (this.closing || this.pending.length >= this.maxBatch) {
      this._clearTimer();
      this.sending = this._sendOne();
      return;
    }
    if (this.timer) return;
    const wait = Math.max(0, this.oldest + this.maxDelayMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.sending && this.pending.length > 0) this.sending = this._sendOne();
    }, wait);
  }

  _clearTimer() {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  async _sendOne() {
    const batch = this.pending.splice(0, this.maxBatch);
    if (this.pending.length > 0) this.oldest = Date.now();
    for (const p of batch) p.attempts++;
    let error = null;
    try {
      await this.send(batch.map((p) => p.id));
    } catch (e) {
      error = e;
    }
    if (error) {
      if (this.onError) {
        try { this.onError(error); } catch { /* a callback must not break acks */ }
      }
      if (RETRYABLE_ACK.has(error.code)) {
        const kept = batch.filter((p) => p.attempts < this.maxAttempts);
        if (kept.length > 0) {
          this.pending.unshift(...kept);
          this.oldest = Date.now(); // do not hammer a server that is down
        }
      }
    }
    this.sending = null;
    if (error && !this.closing) {
      // Wait the delay before the retry even if a full batch is pending.
      this._clearTimer();
      if (this.pending.length > 0) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this._schedule();
        }, this.maxDelayMs);
      }
      return;
    }
    this._schedule();
  }

  // Sends every pending id (retrying as above), then resolves. Idempotent.
  close() {
    if (this.closed) return this.closed;
    this.closing = true;
    this._clearTimer();
    this.closed = (async () => {
      while (this.sending || this.pending.length > 0) {
        if (!this.sending) this.sending = this._sendOne();
        await this.sending;
      }
    })();
    return this.closed;
  }
}

module.exports = { AckBatcher };
