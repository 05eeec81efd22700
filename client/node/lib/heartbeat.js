'use strict';
// Heartbeat: keeps the deliveries of running handlers from timing out (as
// client/heartbeat.h). While a delivery is registered (begin..end) it is
// extended, one MessageExtend each, every `fraction * ackWait`, each time
// by ackWait, so the server sends it to nobody else meanwhile.
//
// For a delivery received at R with the table's ack wait W: an extend is
// due at R + fraction*W, then fraction*W after each extend (or failed try);
// each asks for min(W, R + W + maxExtension - now), so a delivery is never
// held past R + W + maxExtension; after that it times out as usual. Times
// are seconds on the monotonic clock (performance.now() / 1000). An
// extend that counts 0 means the delivery was lost (sent again since, or
// settled): counted in stats.lost and not extended again. A failed extend
// goes to onError and is tried again at the next interval. Until the ack
// wait is known (setAckWait) nothing is extended. Seconds throughout.

const { performance } = require('node:perf_hooks');

// Seconds on the monotonic clock: what begin() and tick() take.
function monotonicSeconds() {
  return performance.now() / 1000;
}

class Heartbeat {
  // extend(delivery, seconds) -> Promise<number moved>; onError(err).
  constructor({ fraction = 0.5, maxExtension = 600, ackWait = 0 } = {},
              extend, onError) {
    this.fraction = Math.min(1, Math.max(0.05, fraction));
    this.maxExtension = Math.max(0, maxExtension);
    this.enabled = this.maxExtension > 0;
    this.extend = extend;
    this.onError = onError;
    this.ackWait = 0;
    this.entries = new Map(); // ticket -> entry
    this.nextTicket = 1;
    this.timer = null;
    this.timerDue = Infinity;
    this.inFlight = new Set();
    this.closed = false;
    this.stats = { extended: 0, lost: 0, errors: 0 };
    if (ackWait > 0) this.setAckWait(ackWait);
  }

  // The table's ack wait in seconds; 0/undefined = unknown (no extends).
  setAckWait(seconds) {
    this.ackWait = seconds > 0 ? seconds : 0;
    this._reschedule(true);
  }

  // Extends `delivery`, received at `receivedAt` (monotonicSeconds()),
  // until end(ticket). Returns 0 (tracking nothing) when disabled or closed.
  begin(delivery, receivedAt) {
    if (!this.enabled || this.closed) return 0;
    const ticket = this.nextTicket++;
    this.entries.set(ticket, {
      delivery, received: receivedAt, lastTry: receivedAt, inFlight: false,
      exhausted: false,
    });
    this._reschedule();
    return ticket;
  }

  end(ticket) {
    this.entries.delete(ticket);
  }

  _interval() {
    return this.ackWait * this.fraction;
  }

  _nextDue() {
    if (this.ackWait <= 0) return Infinity;
    let next = Infinity;
    for (const e of this.entries.values()) {
      if (e.inFlight || e.exhausted) continue;
      const due = e.lastTry + this._interval();
      if (due >= e.received + this.ackWait + this.maxExtension) continue;
      next = Math.min(next, due);
    }
    return next;
  }

  _reschedule(force = false) {
    if (this.closed) return;
    const due = this._nextDue();
    if (!force && this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerDue = due;
    if (due === Infinity) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerDue = Infinity;
      this.tick();
    }, Math.max(0, (due - monotonicSeconds()) * 1000));
  }

  // Sends every extend due at `now` (seconds); resolves when they answered.
  async tick(now = monotonicSeconds()) {
    if (this.ackWait <= 0 || this.closed) return;
    const due = [];
    for (const [ticket, e] of this.entries) {
      if (e.inFlight || e.exhausted || now < e.lastTry + this._interval()) continue;
      const left = e.received + this.ackWait + this.maxExtension - now;
      if (left <= 0) {
        e.exhausted = true;
        continue;
      }
      e.inFlight = true;
      due.push({ ticket, e, seconds: Math.min(this.ackWait, left) });
    }
    const work = due.map(async ({ ticket, e, seconds }) => {
      let moved = null;
      try {
        moved = await this.extend(e.delivery, seconds);
      } catch (err) {
        this.stats.errors++;
        if (this.onError) {
          try { this.onError(err); } catch { /* ignore */ }
        }
      }
      if (moved === 0) this.stats.lost++;
      else if (moved !== null) this.stats.extended++;
      if (!this.entries.has(ticket)) return; // ended meanwhile
      if (moved === 0) {
        this.entries.delete(ticket); // lost: never again
        return;
      }
      e.inFlight = false;
      e.lastTry = now;
    });
    const all = Promise.all(work);
    this.inFlight.add(all);
    try {
      await all;
    } finally {
      this.inFlight.delete(all);
      this._reschedule();
    }
  }

  // Stops extending and waits for extends in flight. Idempotent.
  async close() {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.entries.clear();
    await Promise.all([...this.inFlight]);
  }
}

module.exports = { Heartbeat, monotonicSeconds };
