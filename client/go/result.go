package msgq

import (
	"context"
	"fmt"
	"time"
)

// Handler decides the fate of one message by its Result. It runs on one of
// the subscriber's worker goroutines (Options.Concurrency of them). ctx
// ends only when Run's drain outlasts Options.DrainTimeout (a handler is
// otherwise left to finish). A handler that panics retries the message
// with the table's backoff, as Fail does. Delivery is at least once: a
// handler must tolerate seeing a message again.
type Handler func(ctx context.Context, m *Message) Result

// ResultKind is what a Result does with a message.
type ResultKind int

const (
	// KindAck acknowledges the message (MessageAck, batched).
	KindAck ResultKind = iota
	// KindRetry sends it again later (MessageNack).
	KindRetry
	// KindDead marks it dead now (MessageNack with dead set).
	KindDead
)

func (k ResultKind) String() string {
	switch k {
	case KindAck:
		return "ack"
	case KindRetry:
		return "retry"
	case KindDead:
		return "dead"
	}
	return fmt.Sprintf("ResultKind(%d)", int(k))
}

// Result is a handler's answer: Ack(), Retry(delay, reason),
// RetryBackoff(reason), Dead(reason) or Fail(err). A plain value; the zero
// Result is Ack().
type Result struct {
	kind     ResultKind
	delay    time.Duration
	hasDelay bool
	reason   string
	err      error // Fail's error (recorded on the consumer span)
}

// Ack: done, acknowledge the message.
func Ack() Result { return Result{kind: KindAck} }

// Retry: not done, send it again after delay (0 = as soon as possible; a
// negative delay counts as 0). reason is stored in the row's last_error
// column if the table has one. The table's msgq_max_attempts and
// msgq_max_age still apply: a message past them dies instead.
func Retry(delay time.Duration, reason string) Result {
	if delay < 0 {
		delay = 0
	}
	return Result{kind: KindRetry, delay: delay, hasDelay: true, reason: reason}
}

// RetryBackoff: not done, send it again after the table's backoff for the
// message's epoch (vt_min_backoff doubling up to vt_max_backoff): a
// MessageNack without a delay.
func RetryBackoff(reason string) Result { return Result{kind: KindRetry, reason: reason} }

// Dead: never going to work; dead now, whatever the attempts left. It shows
// in Client.ListDead until redriven.
func Dead(reason string) Result { return Result{kind: KindDead, reason: reason} }

// Fail: the result of an error: nil acks, any other error retries with the
// table's backoff and the error's text as the reason (as a panicking
// handler does).
func Fail(err error) Result {
	if err == nil {
		return Ack()
	}
	r := RetryBackoff(err.Error())
	r.err = err
	return r
}

// HandlerFunc adapts a function returning an error to a Handler: nil acks,
// an error retries with the table's backoff (see Fail).
func HandlerFunc(f func(ctx context.Context, m *Message) error) Handler {
	return func(ctx context.Context, m *Message) Result { return Fail(f(ctx, m)) }
}

// Kind reports what the result does.
func (r Result) Kind() ResultKind { return r.kind }

// Delay is the retry delay; ok is false for the table's backoff (and for
// Ack and Dead).
func (r Result) Delay() (delay time.Duration, ok bool) { return r.delay, r.hasDelay }

// Reason is why the message failed ("" for Ack).
func (r Result) Reason() string { return r.reason }

// Err is the error given to Fail (nil for the other results).
func (r Result) Err() error { return r.err }

func (r Result) String() string {
	switch {
	case r.kind == KindRetry && r.hasDelay:
		return fmt.Sprintf("retry(delay=%v, reason=%q)", r.delay, r.reason)
	case r.kind == KindRetry:
		return fmt.Sprintf("retry(backoff, reason=%q)", r.reason)
	case r.kind == KindDead:
		return fmt.Sprintf("dead(reason=%q)", r.reason)
	}
	return "ack"
}
