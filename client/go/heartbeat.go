package msgq

import (
	"context"
	"sync"
	"time"
)

// HeartbeatOptions say how a subscriber extends the deliveries of running
// handlers (MessageExtend), so that a slow handler keeps its message: every
// Fraction * ack wait, each time by the ack wait, and never past
// receipt + ack wait + MaxExtension. Zero fields take the defaults.
type HeartbeatOptions struct {
	// Extend every Fraction * ack wait; default 0.5, clamped to [0.05, 1].
	Fraction float64
	// The longest a delivery is held past its first deadline (receipt + ack
	// wait) by extends; default 10 minutes; negative disables heartbeats.
	MaxExtension time.Duration
	// The table's ack wait if known; 0 = learn it with ListTables (on the
	// message's server) at each stream start.
	AckWait time.Duration
}

func (o HeartbeatOptions) withDefaults() HeartbeatOptions {
	if o.Fraction == 0 {
		o.Fraction = 0.5
	}
	if o.Fraction < 0.05 {
		o.Fraction = 0.05
	}
	if o.Fraction > 1 {
		o.Fraction = 1
	}
	if o.MaxExtension == 0 {
		o.MaxExtension = 10 * time.Minute
	}
	return o
}

type hbEntry struct {
	delivery  Delivery
	received  time.Time
	lastTry   time.Time // the last extend (or try), or received
	inFlight  bool
	exhausted bool // held as long as MaxExtension allows
}

type hbStats struct{ extended, lost, errors int64 }

// heartbeat keeps registered deliveries (begin..end) from timing out, as the
// C++ Heartbeat (client/heartbeat.h). For a delivery received at R with ack
// wait W: an extend is due at R + f*W, then f*W after each extend (or failed
// try); each asks for min(W, R + W + MaxExtension - now). An extend that
// counts 0 means the delivery was lost (sent again, or settled): it is never
// extended again. A failed extend goes to onError and is tried again at the
// next interval. Until the ack wait is known nothing is extended. Safe for
// concurrent use; extends run on its goroutine, never under its lock.
type heartbeat struct {
	fraction float64
	maxExt   time.Duration
	enabled  bool
	extend   func(ctx context.Context, d Delivery, dur time.Duration) (int64, error)
	onError  func(error)
	now      func() time.Time

	mu      sync.Mutex
	ackWait time.Duration
	entries map[uint64]*hbEntry
	next    uint64
	stats   hbStats

	ctx    context.Context // canceled by close
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}
	start  sync.Once
}

func newHeartbeat(o HeartbeatOptions, extend func(context.Context, Delivery, time.Duration) (int64, error), onError func(error)) *heartbeat {
	o = o.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	h := &heartbeat{
		fraction: o.Fraction, maxExt: o.MaxExtension, enabled: o.MaxExtension > 0,
		extend: extend, onError: onError, now: time.Now,
		entries: map[uint64]*hbEntry{}, next: 1,
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	if o.AckWait > 0 {
		h.ackWait = o.AckWait
	}
	return h
}

func (h *heartbeat) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// setAckWait sets the table's ack wait; <= 0 = unknown (no extends).
func (h *heartbeat) setAckWait(w time.Duration) {
	h.mu.Lock()
	h.ackWait = w
	h.mu.Unlock()
	h.signal()
}

// run starts the goroutine that extends when due (once; not when disabled).
func (h *heartbeat) run() {
	h.start.Do(func() {
		if !h.enabled {
			close(h.done)
			return
		}
		go h.loop()
	})
}

// close stops the goroutine, canceling an extend in flight. Idempotent.
func (h *heartbeat) close() {
	h.run() // a heartbeat never started has nothing to wait for
	h.cancel()
	<-h.done
}

func (h *heartbeat) begin(d Delivery, received time.Time) uint64 {
	if !h.enabled {
		return 0
	}
	h.mu.Lock()
	t := h.next
	h.next++
	h.entries[t] = &hbEntry{delivery: d, received: received, lastTry: received}
	h.mu.Unlock()
	h.signal()
	return t
}

func (h *heartbeat) end(ticket uint64) {
	if ticket == 0 {
		return
	}
	h.mu.Lock()
	delete(h.entries, ticket)
	h.mu.Unlock()
}

func (h *heartbeat) interval() time.Duration {
	return time.Duration(float64(h.ackWait) * h.fraction)
}

// nextDue is when the next extend is due (zero time: none can be). Locked.
func (h *heartbeat) nextDueLocked() time.Time {
	var next time.Time
	if h.ackWait <= 0 {
		return next
	}
	for _, e := range h.entries {
		if e.inFlight || e.exhausted {
			continue
		}
		due := e.lastTry.Add(h.interval())
		// Past the cap nothing is asked for: the entry just waits for end.
		if !due.Before(e.received.Add(h.ackWait + h.maxExt)) {
			continue
		}
		if next.IsZero() || due.Before(next) {
			next = due
		}
	}
	return next
}

func (h *heartbeat) loop() {
	defer close(h.done)
	for {
		h.mu.Lock()
		due := h.nextDueLocked()
		h.mu.Unlock()
		var timer <-chan time.Time
		var t *time.Timer
		if !due.IsZero() {
			t = time.NewTimer(time.Until(due))
			timer = t.C
		}
		select {
		case <-h.ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-h.wake:
		case <-timer:
			h.tick()
		}
		if t != nil {
			t.Stop()
		}
	}
}

type hbDue struct {
	ticket   uint64
	delivery Delivery
	duration time.Duration
}

// tick sends every extend due now and waits for the answers.
func (h *heartbeat) tick() {
	now := h.now()
	var due []hbDue
	h.mu.Lock()
	if h.ackWait <= 0 {
		h.mu.Unlock()
		return
	}
	for t, e := range h.entries {
		if e.inFlight || e.exhausted || now.Before(e.lastTry.Add(h.interval())) {
			continue
		}
		left := e.received.Add(h.ackWait + h.maxExt).Sub(now)
		if left <= 0 {
			e.exhausted = true
			continue
		}
		d := h.ackWait
		if left < d {
			d = left
		}
		e.inFlight = true
		due = append(due, hbDue{ticket: t, delivery: e.delivery, duration: d})
	}
	h.mu.Unlock()
	for _, d := range due {
		n, err := h.extend(h.ctx, d.delivery, d.duration)
		if err != nil && h.onError != nil && h.ctx.Err() == nil {
			h.onError(err)
		}
		h.mu.Lock()
		switch {
		case err != nil:
			h.stats.errors++
		case n == 0:
			h.stats.lost++
		default:
			h.stats.extended++
		}
		if e, ok := h.entries[d.ticket]; ok {
			if err == nil && n == 0 {
				delete(h.entries, d.ticket) // lost: never extend it again
			} else {
				e.inFlight = false
				e.lastTry = now
			}
		}
		h.mu.Unlock()
	}
}

func (h *heartbeat) statsNow() hbStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}
