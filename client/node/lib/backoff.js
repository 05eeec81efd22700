'use strict';
// Backoff: capped exponential delays with multiplicative jitter, reset after
// a success (as common/backoff.h): the n-th delay since reset() is
//   min(max, initial * multiplier^n * (1 + u)),  u uniform in [-jitter, +jitter].
// Seconds. Defaults: 0.1 s doubling to 5 s, +-20%.

class Backoff {
  constructor({ initial = 0.1, multiplier = 2, max = 5, jitter = 0.2 } = {},
              random = Math.random) {
    this.initial = initial;
    this.multiplier = Math.max(1, multiplier);
    this.max = max;
    this.jitter = Math.min(1, Math.max(0, jitter));
    this.random = random;
    this.attempt = 0;
  }

  // The next delay in seconds; advances the sequence.
  next() {
    const nominal = this.initial * this.multiplier ** this.attempt;
    if (nominal < this.max) this.attempt++;
    const u = (this.random() * 2 - 1) * this.jitter;
    return Math.min(this.max, nominal * (1 + u));
  }

  reset() {
    this.attempt = 0;
  }
}

module.exports = { Backoff };
