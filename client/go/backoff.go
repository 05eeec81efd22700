package msgq

import (
	"math"
	"math/rand"
	"time"
)

// BackoffOptions are the delays between a subscriber's reconnects to one
// server: the n-th delay since the last stream start is
// min(Max, Initial * Multiplier^n * (1 + u)), u uniform in [-Jitter, +Jitter].
// Zero fields take the defaults (100ms doubling to 5s, +-20%).
type BackoffOptions struct {
	Initial    time.Duration // default 100ms
	Multiplier float64       // default 2; below 1 counts as 1
	Max        time.Duration // default 5s; the cap, jitter included
	Jitter     float64       // default 0.2; clamped to [0, 1]; negative = none
}

func (o BackoffOptions) withDefaults() BackoffOptions {
	if o.Initial <= 0 {
		o.Initial = 100 * time.Millisecond
	}
	if o.Multiplier == 0 {
		o.Multiplier = 2
	}
	if o.Multiplier < 1 {
		o.Multiplier = 1
	}
	if o.Max <= 0 {
		o.Max = 5 * time.Second
	}
	if o.Max < o.Initial {
		o.Max = o.Initial
	}
	switch {
	case o.Jitter == 0:
		o.Jitter = 0.2
	case o.Jitter < 0:
		o.Jitter = 0
	case o.Jitter > 1:
		o.Jitter = 1
	}
	return o
}

// backoff computes capped, jittered exponential delays; not safe for
// concurrent use (each server stream has its own).
type backoff struct {
	o       BackoffOptions
	attempt int
	rng     *rand.Rand
}

func newBackoff(o BackoffOptions, seed int64) *backoff {
	return &backoff{o: o.withDefaults(), rng: rand.New(rand.NewSource(seed))}
}

func (b *backoff) next() time.Duration {
	initial, max := b.o.Initial.Seconds(), b.o.Max.Seconds()
	nominal := initial * math.Pow(b.o.Multiplier, float64(b.attempt))
	if nominal < max {
		b.attempt++ // stop growing once past the cap
	}
	nominal = math.Min(nominal, max)
	factor := 1.0
	if b.o.Jitter > 0 {
		factor += (b.rng.Float64()*2 - 1) * b.o.Jitter
	}
	return time.Duration(math.Min(max, nominal*factor) * float64(time.Second))
}

func (b *backoff) reset() { b.attempt = 0 }
