package msgq

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AckBatchOptions say how a subscriber batches acknowledgements (one batcher
// per server): a batch is sent as soon as MaxBatch ids are pending, or
// MaxDelay after the oldest pending id was added, whichever comes first.
// Zero fields take the defaults.
type AckBatchOptions struct {
	MaxBatch    int           // most ids per MessageAck; default 100
	MaxDelay    time.Duration // longest an id waits for companions; default 50ms
	MaxAttempts int           // sends per id on retryable failures; default 3
}

func (o AckBatchOptions) withDefaults() AckBatchOptions {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 100
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 50 * time.Millisecond
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	return o
}

// isRetryableAckError: the ack may succeed if sent again.
func isRetryableAckError(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted:
		return true
	}
	return false
}

type pendingAck struct {
	id       string
	attempts int
}

// ackBatcher collects ids and sends them in batches on its own goroutine,
// never under its lock (as the C++ AckBatcher). A batch that fails with a
// retryable code (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED,
// RESOURCE_EXHAUSTED) is queued again, in front, until it was tried
// MaxAttempts times; other failures drop it. Every failure goes to onError.
// Dropped ids are not lost for good: the server sends unacknowledged
// messages again after the table's ack wait. Safe for concurrent use.
type ackBatcher struct {
	o       AckBatchOptions
	send    func(ctx context.Context, ids []string) error
	onError func(error)

	sendCtx   context.Context // canceled by abort
	abortSend context.CancelFunc

	mu      sync.Mutex
	pending []pendingAck
	oldest  time.Time // when pending[0] was queued
	closing bool

	wake chan struct{} // capacity 1
	done chan struct{}
}

func newAckBatcher(o AckBatchOptions, send func(ctx context.Context, ids []string) error, onError func(error)) *ackBatcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &ackBatcher{
		o: o.withDefaults(), send: send, onError: onError,
		sendCtx: ctx, abortSend: cancel,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go b.run()
	return b
}

func (b *ackBatcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// add queues id; false (id dropped) once close has begun.
func (b *ackBatcher) add(id string) bool {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return false
	}
	if len(b.pending) == 0 {
		b.oldest = time.Now()
	}
	b.pending = append(b.pending, pendingAck{id: id})
	n := len(b.pending)
	b.mu.Unlock()
	if n == 1 || n >= b.o.MaxBatch {
		b.signal()
	}
	return true
}

// close sends every pending id (retrying as above), then stops the
// goroutine. When ctx ends first, the sends in flight are canceled and what
// is left is dropped. Idempotent.
func (b *ackBatcher) close(ctx context.Context) {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.signal()
	select {
	case <-b.done:
	case <-ctx.Done():
		b.abortSend()
		<-b.done
	}
	b.abortSend()
}

func (b *ackBatcher) run() {
	defer close(b.done)
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		for len(b.pending) == 0 {
			if b.closing {
				return
			}
			b.mu.Unlock()
			<-b.wake
			b.mu.Lock()
		}
		for !b.closing && len(b.pending) < b.o.MaxBatch {
			wait := time.Until(b.oldest.Add(b.o.MaxDelay))
			if wait <= 0 {
				break
			}
			b.mu.Unlock()
			timer := time.NewTimer(wait)
			select {
			case <-b.wake:
			case <-timer.C:
			}
			timer.Stop()
			b.mu.Lock()
		}
		if b.sendCtx.Err() != nil { // aborted: drop the rest
			b.pending = nil
			continue
		}
		n := len(b.pending)
		if n > b.o.MaxBatch {
			n = b.o.MaxBatch
		}
		batch := append([]pendingAck(nil), b.pending[:n]...)
		b.pending = append(b.pending[:0:0], b.pending[n:]...)
		if len(b.pending) > 0 {
			b.oldest = time.Now()
		}
		ids := make([]string, n)
		for i := range batch {
			batch[i].attempts++
			ids[i] = batch[i].id
		}

		b.mu.Unlock()
		err := b.send(b.sendCtx, ids)
		if err != nil && b.onError != nil {
			b.onError(err)
		}
		b.mu.Lock()

		if err != nil && isRetryableAckError(err) && b.sendCtx.Err() == nil {
			var kept []pendingAck
			for _, p := range batch {
				if p.attempts < b.o.MaxAttempts {
					kept = append(kept, p)
				}
			}
			if len(kept) > 0 {
				// Retries go first so they keep their place; the delay
				// restarts so a server that is down is not hammered.
				b.pending = append(kept, b.pending...)
				b.oldest = time.Now()
			}
		}
	}
}
