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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Options configure a Subscriber. The zero value is usable: every zero field
// takes the default given.
type Options struct {
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
	// Seed of the backoff jitter; 0 picks a random one. Server i uses
	// JitterSeed + i.
	JitterSeed int64
	// When true, failing to start the very first stream to a server (e.g.
	// UNAVAILABLE: it is down) ends the subscription with that error
	// instead of waiting for the server; later reconnects always retry.
	FailFastInitialConnect bool

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

	// How Subscribe dials its servers (not used by SubscribeConns).
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
	o.AckBatch = o.AckBatch.withDefaults()
	o.Heartbeat = o.Heartbeat.withDefaults()
	o.Backoff = o.Backoff.withDefaults()
	return o
}

// Server is one server of SubscribeConns: a name (Message.Server, callbacks
// and errors; by convention its address) and a connection to it.
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
// whenever a stream starts; a reopened stream waits for the connection to
// come back (gRPC wait-for-ready) instead of failing over and over. Other
// errors (NOT_FOUND, FAILED_PRECONDITION, INVALID_ARGUMENT,
// UNAUTHENTICATED, PERMISSION_DENIED, ...) and protocol violations from any
// server end the whole subscription: Done is closed and Err returns the
// error (prefixed "server NAME: " when there are several servers).
//
// Delivery is at least once: a handler must tolerate seeing a message again.
// All methods are safe for concurrent use; Close must not be called from a
// handler or callback (use Stop there).
type Subscriber struct {
	table   Table
	handler Handler
	o       Options
	tracer  trace.Tracer // nil: NoTracing
	streams []*serverStream
	owned   []*grpc.ClientConn

	queue    chan received
	stopping chan struct{} // closed by Stop
	stopOnce sync.Once

	streamCtx     context.Context // canceled by Stop: streams and their calls
	cancelStreams context.CancelFunc
	handlerCtx    context.Context // canceled when Close gives up waiting
	cancelHandler context.CancelFunc

	streamsWG sync.WaitGroup
	workersWG sync.WaitGroup
	done      chan struct{} // closed when every stream loop ended

	mu       sync.Mutex
	err      error // the first fatal error
	closing  bool
	closed   chan struct{} // closed when Close finished
	closeErr error

	handled, failed int64
}

// Subscribe dials every server of servers (with opts.Security and
// opts.DialOptions; see Dial) and starts receiving table into handler. The
// streams open asynchronously: an unknown table shows up as Err once Done is
// closed, not here. Errors here: INVALID_ARGUMENT for no servers, a server
// given twice, an empty table name, a nil handler, negative Concurrency or
// MaxUnacked, or bad Security.
func Subscribe(servers []string, table Table, handler Handler, opts Options) (*Subscriber, error) {
	if len(servers) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no servers")
	}
	var conns []Server
	var owned []*grpc.ClientConn
	closeAll := func() {
		for _, c := range owned {
			c.Close()
		}
	}
	for _, target := range servers {
		conn, err := Dial(target, opts.Security, opts.DialOptions...)
		if err != nil {
			closeAll()
			return nil, err
		}
		owned = append(owned, conn)
		conns = append(conns, Server{Name: target, Conn: conn})
	}
	s, err := newSubscriber(conns, table, handler, opts)
	if err != nil {
		closeAll()
		return nil, err
	}
	s.owned = owned
	s.start()
	return s, nil
}

// SubscribeConns is Subscribe over connections of the caller's (which Close
// does not close).
func SubscribeConns(servers []Server, table Table, handler Handler, opts Options) (*Subscriber, error) {
	s, err := newSubscriber(servers, table, handler, opts)
	if err != nil {
		return nil, err
	}
	s.start()
	return s, nil
}

func newSubscriber(servers []Server, table Table, handler Handler, opts Options) (*Subscriber, error) {
	if len(servers) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no servers")
	}
	names := map[string]bool{}
	for _, sv := range servers {
		if sv.Conn == nil {
			return nil, status.Errorf(codes.InvalidArgument, "nil connection for server %q", sv.Name)
		}
		if names[sv.Name] {
			return nil, status.Errorf(codes.InvalidArgument, "server %q given twice", sv.Name)
		}
		names[sv.Name] = true
	}
	if handler == nil {
		return nil, status.Error(codes.InvalidArgument, "nil handler")
	}
	if table.Name == "" {
		return nil, status.Error(codes.InvalidArgument, "empty table name")
	}
	if opts.Concurrency < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "concurrency must be at least 1, got %d", opts.Concurrency)
	}
	if opts.MaxUnacked < 0 || opts.MaxUnacked > 1<<31-1 {
		return nil, status.Errorf(codes.InvalidArgument, "max unacked must be in [0, 2^31), got %d", opts.MaxUnacked)
	}
	if opts.CallTimeout < 0 {
		return nil, status.Error(codes.InvalidArgument, "call timeout must be positive")
	}
	o := opts.withDefaults()
	s := &Subscriber{
		table: table, handler: handler, o: o, tracer: newTracer(o),
		queue:    make(chan received, o.QueueCapacity),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
	}
	s.streamCtx, s.cancelStreams = context.WithCancel(context.Background())
	s.handlerCtx, s.cancelHandler = context.WithCancel(context.Background())
	seed := o.JitterSeed
	if seed == 0 {
		seed = rand.Int63()
	}
	label := len(servers) > 1
	for i, sv := range servers {
		s.streams = append(s.streams, newServerStream(s, sv, seed+int64(i), label))
	}
	return s, nil
}

func (s *Subscriber) start() {
	for i := 0; i < s.o.Concurrency; i++ {
		s.workersWG.Add(1)
		go s.work()
	}
	for _, st := range s.streams {
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
	first := s.err == nil
	if first {
		s.err = err
	}
	s.mu.Unlock()
	// One server's fatal error ends the subscription on every server.
	s.Stop()
}

// Stop asks the subscriber to stop and returns at once: the streams are
// canceled and messages not yet handed to a handler are dropped (they are
// sent again after the table's ack wait). Running handlers finish. Safe
// from a handler. Close does this and then waits.
func (s *Subscriber) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.cancelStreams()
	})
}

// Done is closed once every stream has ended: after Stop or Close, or
// because of a fatal error (see Err). Handlers may still be running: Close
// waits for them.
func (s *Subscriber) Done() <-chan struct{} { return s.done }

// Err returns the error that ended the subscription, or nil (running, or
// stopped by Stop/Close).
func (s *Subscriber) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Wait blocks until Done and returns Err.
func (s *Subscriber) Wait() error {
	<-s.done
	return s.Err()
}

// Close stops taking messages (Stop), waits for the running handlers (and
// their nacks), flushes the acks they produced, and closes the connections
// Subscribe dialled. If ctx ends first, Close cancels the handlers' context,
// stops waiting and flushing, and returns ctx.Err(): what was not acked
// comes back after the table's ack wait. Returns nil otherwise (the fatal
// error, if any, is Err's). Idempotent: later calls wait for the first.
// Not from a handler or callback.
func (s *Subscriber) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		select {
		case <-s.closed:
			return s.closeErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.closing = true
	s.mu.Unlock()

	s.Stop()
	idle := make(chan struct{})
	go func() {
		s.streamsWG.Wait()
		s.workersWG.Wait()
		close(idle)
	}()
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		s.cancelHandler()
		err = ctx.Err()
	}
	// The workers may have queued acks until they ended: only now flush.
	var wg sync.WaitGroup
	for _, st := range s.streams {
		wg.Add(1)
		go func(st *serverStream) {
			defer wg.Done()
			st.heartbeat.close()
			st.batcher.close(ctx)
		}(st)
	}
	wg.Wait()
	s.cancelHandler()
	for _, c := range s.owned {
		c.Close()
	}
	s.mu.Lock()
	s.closeErr = err
	s.mu.Unlock()
	close(s.closed)
	return err
}

// Stats returns the counters since the subscriber started.
func (s *Subscriber) Stats() Stats {
	st := Stats{Handled: atomic.LoadInt64(&s.handled), Failed: atomic.LoadInt64(&s.failed)}
	for _, ss := range s.streams {
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
