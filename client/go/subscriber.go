package msgq

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// Options configure a Subscriber. The zero value is usable: every zero field
// takes the default given.
type Options struct {
	// A consumer group of the table to read
	// (docs/design/consumer-groups.md), sent on the stream and on the acks
	// and nacks of its messages; "" = the table's default group. A group's
	// deliveries are not extended (MessageExtend names no group): its
	// heartbeats are off. An unknown group ends Run with ErrUnknownTable's
	// code, NOT_FOUND, naming the table's groups.
	Group string
	// Handler calls that may run at once (worker goroutines); default 1.
	// With 1, messages are handled in the order received (per server;
	// across servers in the order they arrive).
	Concurrency int
	// Messages received but not yet given to a handler, from all servers
	// together; default 16. When full, reading pauses and gRPC flow control
	// pushes back on the servers.
	QueueCapacity int
	// Prefetch: each server sends this subscriber at most this many
	// messages unacked at a time (MessageStreamRequest.max_unacked); 0 =
	// unlimited.
	MaxUnacked int
	// Peek: settle nothing. No ack, nack or extend is sent, the handler's
	// result only feeds Stats, and messages come back after the table's ack
	// wait.
	NoSettle bool
	// How acks are batched (one batcher per server).
	AckBatch AckBatchOptions
	// Deadline of each MessageAck, MessageNack, MessageExtend and
	// ListTables call; default 10s.
	CallTimeout time.Duration
	// Extending the deliveries of running handlers (MessageExtend).
	Heartbeat HeartbeatOptions
	// Delays between reconnects (each server has its own backoff).
	Backoff BackoffOptions
	// When true, failing to start the very first stream to a server (e.g.
	// UNAVAILABLE: it is down) ends the subscription with that error
	// instead of waiting for the server; later reconnects always retry.
	FailFastInitialConnect bool
	// How long Run waits, once it stops, for running handlers (and their
	// nacks) and the last acks; then it cancels the handlers' context and
	// returns. Default 30s.
	DrainTimeout time.Duration

	// Tracing: each handled message runs in an OpenTelemetry CONSUMER span
	// "process TABLE", a child of (and linked to) the producer's context
	// from the message's traceparent/tracestate columns (a new root span
	// without them), with the attributes messaging.system "msgq",
	// messaging.operation(.type/.name) "process",
	// messaging.destination.name, messaging.message.id,
	// messaging.msgq.epoch (the redelivery count), messaging.msgq.keyspace
	// and server.address; ended with messaging.msgq.outcome and, for a
	// retry, Dead, Fail or a panic, status Error with the reason. The
	// handler's ctx carries the span. The spans come from TracerProvider,
	// nil = OpenTelemetry's global one (otel.GetTracerProvider(): no-op
	// spans until the application sets a provider). NoTracing: no spans.
	TracerProvider trace.TracerProvider
	NoTracing      bool

	// How NewSubscriber dials its servers (not used by
	// NewSubscriberConns).
	Security    Security
	DialOptions []grpc.DialOption

	// Optional callbacks, run on internal goroutines; they must return
	// quickly. server is the server's name (its address for Subscribe).
	// A stream started; schema holds the table's columns.
	OnConnected func(server string, schema *Schema)
	// A stream ended with a retryable error; the next try is in retryIn.
	OnStreamError func(server string, err error, retryIn time.Duration)
	// A MessageAck call failed (the ids may be retried; see AckBatchOptions).
	OnAckError func(server string, err error)
	// A MessageNack call failed (not retried: the delivery times out after
	// the ack wait and is sent again anyway).
	OnNackError func(server string, err error)
	// Heartbeats cannot work: ListTables failed or does not list the table
	// (reported once per stream start), or a MessageExtend failed.
	OnHeartbeatError func(server string, err error)

	// Seed of the backoff jitter; 0 picks a random one. Server i uses
	// jitterSeed + i. Tests set it.
	jitterSeed int64
}

func (o Options) withDefaults() Options {
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.QueueCapacity <= 0 {
		o.QueueCapacity = 16
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultTimeout
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 30 * time.Second
	}
	o.AckBatch = o.AckBatch.withDefaults()
	o.Heartbeat = o.Heartbeat.withDefaults()
	o.Backoff = o.Backoff.withDefaults()
	return o
}

// Server is one server of NewSubscriberConns: a name (Message.Server,
// callbacks and errors; by convention its address) and a connection to it.
type Server struct {
	Name string
	Conn grpc.ClientConnInterface
}

// Stats are a Subscriber's counters since it started, summed over its
// servers.
type Stats struct {
	Received       int64 // messages decoded from the streams
	Handled        int64 // handler returned Ack
	Failed         int64 // handler returned a retry or Dead (or panicked)
	Acked          int64 // ids the servers reported as newly acked
	AckCalls       int64 // MessageAck calls that succeeded
	Retried        int64 // nacked rows the servers will send again
	Dead           int64 // nacked rows the servers reported dead
	NackCalls      int64 // MessageNack calls that succeeded
	Extended       int64 // extends that kept a delivery
	Lost           int64 // extends that found it sent again
	ExtendErrors   int64 // MessageExtend calls that failed
	StreamsStarted int64 // streams that delivered their fields
	Reconnects     int64 // retries after a stream ended
}

type received struct {
	msg    *Message
	origin *serverStream
}

// Subscriber receives the messages of one table from one or several servers
// and hands each to a Handler, settling it on the server it came from
// according to the handler's Result:
//
//   - Ack: the id joins the next ack batch of its server (one MessageAck per
//     AckBatch.MaxBatch ids or per AckBatch.MaxDelay, never one per message);
//   - Retry, RetryBackoff, Fail (or a panic), Dead: the worker nacks the
//     delivery at once, one MessageNack per message, with the delay (absent
//     for RetryBackoff/Fail: the table's backoff), the reason and the dead
//     flag. A failed nack is reported (OnNackError), not retried.
//
// While a handler runs, its delivery is extended (see HeartbeatOptions) so a
// slow handler keeps its message.
//
// Several servers (fan-in): one MessageStream per server, each kept open on
// its own goroutine, all feeding the same workers. Every message remembers
// its server (Message.Server) and its ack, nack and extends go there only:
// ids are unique only within one shard (several MySQL primaries, one msgqd
// each). The same serves several msgqd sharing one database, where only the
// lease owner of a table sends and the others keep the stream idle.
//
// A stream that ends with a retryable error (UNAVAILABLE: server shutting
// down or restarting, table reloaded, connection dropped; also
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNKNOWN,
// CANCELLED) is reopened after a capped, jittered exponential backoff, reset
// whenever a stream starts; while the server cannot be reached each try fails
// at once (no gRPC wait-for-ready) and is reported to Options.OnStreamError,
// so the application can say so. Other
// errors (ErrUnknownTable, ErrInvalidArgument, ErrUnauthenticated,
// ErrPermissionDenied, FAILED_PRECONDITION, ...) and protocol violations
// from any server end Run with that error (prefixed "server NAME: " when
// there are several servers).
//
// Delivery is at least once: a handler must tolerate seeing a message again.
// Run runs once; Stats is safe for concurrent use.
type Subscriber struct {
	table   Table
	handler Handler
	o       Options
	tracer  trace.Tracer // nil: NoTracing
	seed    int64

	targets []string // NewSubscriber: dialled by Run
	servers []Server // NewSubscriberConns: the caller's

	queue    chan received
	stopping chan struct{} // closed by stop
	stopOnce sync.Once

	streamCtx     context.Context // canceled by stop: streams and their calls
	cancelStreams context.CancelFunc
	handlerCtx    context.Context // canceled when the drain times out
	cancelHandler context.CancelFunc

	streamsWG sync.WaitGroup
	workersWG sync.WaitGroup
	done      chan struct{} // closed when every stream loop ended

	mu      sync.Mutex
	ran     bool
	streams []*serverStream // set by Run
	err     error           // the first fatal error

	handled, failed int64
}

// NewSubscriber returns a Subscriber of table on servers (addresses, each
// dialled by Run with opts.Security and opts.DialOptions; see Dial) that
// hands each message to handler. Nothing is dialled or received until Run.
// Errors (wrapping ErrInvalidArgument): no servers, a server given twice, an
// empty table name, a nil handler, negative Concurrency, MaxUnacked,
// CallTimeout or DrainTimeout, or bad Security.
func NewSubscriber(servers []string, table Table, handler Handler, opts Options) (*Subscriber, error) {
	if len(servers) == 0 {
		return nil, invalidArgument("no servers")
	}
	if _, err := DialOptions(opts.Security); err != nil {
		return nil, err
	}
	conns := make([]Server, len(servers))
	for i, target := range servers {
		if target == "" {
			return nil, invalidArgument("empty server address")
		}
		conns[i] = Server{Name: target}
	}
	s, err := newSubscriber(conns, table, handler, opts)
	if err != nil {
		return nil, err
	}
	s.targets = servers
	return s, nil
}

// NewSubscriberConns is NewSubscriber over connections of the caller's
// (which Run does not close).
func NewSubscriberConns(servers []Server, table Table, handler Handler, opts Options) (*Subscriber, error) {
	if len(servers) == 0 {
		return nil, invalidArgument("no servers")
	}
	for _, sv := range servers {
		if sv.Conn == nil {
			return nil, invalidArgument("nil connection for server %q", sv.Name)
		}
	}
	s, err := newSubscriber(servers, table, handler, opts)
	if err != nil {
		return nil, err
	}
	s.servers = servers
	return s, nil
}

func newSubscriber(servers []Server, table Table, handler Handler, opts Options) (*Subscriber, error) {
	names := map[string]bool{}
	for _, sv := range servers {
		if names[sv.Name] {
			return nil, invalidArgument("server %q given twice", sv.Name)
		}
		names[sv.Name] = true
	}
	if handler == nil {
		return nil, invalidArgument("nil handler")
	}
	if table.Name == "" {
		return nil, invalidArgument("empty table name")
	}
	if opts.Concurrency < 0 {
		return nil, invalidArgument("concurrency must be at least 1, got %d", opts.Concurrency)
	}
	if opts.MaxUnacked < 0 || opts.MaxUnacked > 1<<31-1 {
		return nil, invalidArgument("max unacked must be in [0, 2^31), got %d", opts.MaxUnacked)
	}
	if opts.CallTimeout < 0 {
		return nil, invalidArgument("call timeout must be positive")
	}
	if opts.DrainTimeout < 0 {
		return nil, invalidArgument("drain timeout must be positive")
	}
	o := opts.withDefaults()
	s := &Subscriber{
		table: table, handler: handler, o: o, tracer: newTracer(o),
		queue:    make(chan received, o.QueueCapacity),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.streamCtx, s.cancelStreams = context.WithCancel(context.Background())
	s.handlerCtx, s.cancelHandler = context.WithCancel(context.Background())
	s.seed = o.jitterSeed
	if s.seed == 0 {
		s.seed = rand.Int63()
	}
	return s, nil
}

// Run receives and handles messages until ctx ends or a server answers with
// an error that is not retryable (see Subscriber), then drains: it stops
// reading, waits for the running handlers and their nacks, hands back the
// messages no handler started (one MessageNack with no delay per server, so
// they are sent again at once), flushes the handlers' acks and closes the
// connections it dialled.
// When the drain takes longer than Options.DrainTimeout, Run cancels the
// handlers' context, stops flushing and returns an error wrapping
// context.DeadlineExceeded; what was not acked comes back after the ack
// wait.
//
// Run returns nil when ctx ended and the drain finished, the fatal error
// otherwise (with errors.Is: ErrUnknownTable, ErrUnauthenticated, ...), and
// ErrClosed when called again. The handlers' ctx is not ctx: it ends only
// when the drain times out, so that a handler cut short by shutdown does not
// fail its message.
func (s *Subscriber) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return ErrClosed
	}
	s.ran = true
	s.mu.Unlock()

	servers := s.servers
	var owned []*grpc.ClientConn
	defer func() {
		for _, c := range owned {
			c.Close()
		}
	}()
	for _, target := range s.targets {
		conn, err := Dial(target, s.o.Security, s.o.DialOptions...)
		if err != nil {
			return err
		}
		owned = append(owned, conn)
		servers = append(servers, Server{Name: target, Conn: conn})
	}
	label := len(servers) > 1
	streams := make([]*serverStream, len(servers))
	for i, sv := range servers {
		streams[i] = newServerStream(s, sv, s.seed+int64(i), label)
	}
	s.mu.Lock()
	s.streams = streams
	s.mu.Unlock()

	s.start(streams)
	select {
	case <-ctx.Done():
	case <-s.done: // a fatal error
	}
	drainErr := s.drain(streams)
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return drainErr
}

func (s *Subscriber) start(streams []*serverStream) {
	for i := 0; i < s.o.Concurrency; i++ {
		s.workersWG.Add(1)
		go s.work()
	}
	for _, st := range streams {
		s.streamsWG.Add(1)
		st.heartbeat.run()
		go func(st *serverStream) {
			defer s.streamsWG.Done()
			s.streamEnded(st.run())
		}(st)
	}
	go func() {
		s.streamsWG.Wait()
		close(s.done)
	}()
}

func (s *Subscriber) streamEnded(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = fromRPC(err)
	}
	s.mu.Unlock()
	// One server's fatal error ends the subscription on every server.
	s.stop()
}

// stop cancels the streams and ends the workers once their handler
// returns; the messages no handler started stay queued for handBack.
// Idempotent.
func (s *Subscriber) stop() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.cancelStreams()
	})
}

// drain stops, waits up to DrainTimeout for the streams and running
// handlers, and flushes the acks they produced.
func (s *Subscriber) drain(streams []*serverStream) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.DrainTimeout)
	defer cancel()
	s.stop()
	idle := make(chan struct{})
	go func() {
		s.streamsWG.Wait()
		s.workersWG.Wait()
		close(idle)
	}()
	var err error
	select {
	case <-idle:
		s.handBack(ctx)
	case <-ctx.Done():
		s.cancelHandler()
		err = fmt.Errorf("msgq: handlers still running after the drain timeout of %v: %w", s.o.DrainTimeout, ctx.Err())
	}
	// The workers may have queued acks until they ended: only now flush.
	var wg sync.WaitGroup
	for _, st := range streams {
		wg.Add(1)
		go func(st *serverStream) {
			defer wg.Done()
			st.heartbeat.close()
			st.batcher.close(ctx)
		}(st)
	}
	wg.Wait()
	s.cancelHandler()
	return err
}

// handBack nacks, with no delay, the messages received that no handler
// started, one MessageNack per server, so that they are sent again at once
// instead of after the table's ack wait. Only once the streams and workers
// have ended: nothing else touches the queue then. A failed nack goes to
// OnNackError; those messages come back after the ack wait.
func (s *Subscriber) handBack(ctx context.Context) {
	byOrigin := map[*serverStream][]Delivery{}
	var order []*serverStream
queued:
	for {
		select {
		case r := <-s.queue:
			if byOrigin[r.origin] == nil {
				order = append(order, r.origin)
			}
			byOrigin[r.origin] = append(byOrigin[r.origin], r.msg.Delivery())
		default:
			break queued
		}
	}
	if s.o.NoSettle {
		return
	}
	result := Retry(0, "consumer stopped before it")
	for _, origin := range order {
		res, err := origin.client.nack(ctx, s.table, s.o.Group, byOrigin[origin], result)
		if err != nil {
			if s.o.OnNackError != nil {
				s.o.OnNackError(origin.name, err)
			}
			continue
		}
		atomic.AddInt64(&origin.nackCalls, 1)
		atomic.AddInt64(&origin.retried, res.Retried)
		atomic.AddInt64(&origin.dead, res.Dead)
	}
}

// Stats returns the counters since the subscriber started.
func (s *Subscriber) Stats() Stats {
	st := Stats{Handled: atomic.LoadInt64(&s.handled), Failed: atomic.LoadInt64(&s.failed)}
	s.mu.Lock()
	streams := s.streams
	s.mu.Unlock()
	for _, ss := range streams {
		ss.addStats(&st)
	}
	return st
}

func (s *Subscriber) work() {
	defer s.workersWG.Done()
	for {
		select {
		case <-s.stopping:
			return
		default:
		}
		select {
		case <-s.stopping:
			return
		case r := <-s.queue:
			s.handle(r)
		}
	}
}

func (s *Subscriber) handle(r received) {
	origin := r.origin
	ticket := origin.heartbeat.begin(r.msg.Delivery(), r.msg.received)
	ctx := s.handlerCtx
	var span trace.Span
	if s.tracer != nil {
		ctx, span = s.startSpan(ctx, r.msg)
	}
	result, panicked := s.call(ctx, r.msg)
	origin.heartbeat.end(ticket)
	if span != nil {
		endSpan(span, result, panicked)
	}
	if result.kind == KindAck {
		atomic.AddInt64(&s.handled, 1)
	} else {
		atomic.AddInt64(&s.failed, 1)
	}
	if s.o.NoSettle {
		return
	}
	if result.kind == KindAck {
		origin.batcher.add(r.msg.ID())
		return
	}
	origin.nack(r.msg, result)
}

// call runs the handler; a panic is a retry with the table's backoff (and
// returned as panicked).
func (s *Subscriber) call(ctx context.Context, m *Message) (result Result, panicked error) {
	defer func() {
		if p := recover(); p != nil {
			result = RetryBackoff(fmt.Sprintf("handler panicked: %v", p))
			panicked = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return s.handler(ctx, m), nil
}
