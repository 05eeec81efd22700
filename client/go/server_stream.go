package msgq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"msgq.dev/client/go/internal/msgqv1"
)

// isRetryableStreamError: a stream that ended so is reopened (as the C++
// client's IsRetryableStreamError). A nil error is a stream the server ended
// without a status.
func isRetryableStreamError(err error) bool {
	switch status.Code(err) {
	case codes.OK, codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Aborted, codes.Internal, codes.Unknown, codes.Canceled:
		return true
	}
	return false
}

// serverStream is a Subscriber's connection to one server: it keeps one
// MessageStream open (reopening it as the Subscriber comment says) and owns
// what settles the messages it received (a Client on the same connection,
// an ackBatcher and a heartbeat), so that a message's ack, nack and extends
// go to the server that sent it and no other.
type serverStream struct {
	s         *Subscriber
	name      string
	seed      int64
	label     bool
	stub      msgqv1.MessagingClient
	client    *Client
	batcher   *ackBatcher
	heartbeat *heartbeat

	received, acked, ackCalls, retried, dead, nackCalls, started, reconnects int64
}

func newServerStream(s *Subscriber, sv Server, seed int64, label bool) *serverStream {
	ss := &serverStream{
		s: s, name: sv.Name, seed: seed, label: label,
		stub:   msgqv1.NewMessagingClient(sv.Conn),
		client: NewClientConn(sv.Conn).WithTimeout(s.o.CallTimeout),
	}
	ss.batcher = newAckBatcher(s.o.AckBatch, ss.sendAcks, func(err error) {
		if s.o.OnAckError != nil {
			s.o.OnAckError(ss.name, err)
		}
	})
	hb := s.o.Heartbeat
	if s.o.NoSettle || s.o.Group != "" {
		hb.MaxExtension = -1
	}
	ss.heartbeat = newHeartbeat(hb, func(ctx context.Context, d Delivery, dur time.Duration) (int64, error) {
		return ss.client.Extend(ctx, s.table, []Delivery{d}, dur)
	}, func(err error) { ss.heartbeatError(err) })
	return ss
}

func (ss *serverStream) heartbeatError(err error) {
	if ss.s.o.OnHeartbeatError != nil {
		ss.s.o.OnHeartbeatError(ss.name, err)
	}
}

// labelled prefixes err with "server NAME: " when the subscriber has
// several servers, keeping its code.
func (ss *serverStream) labelled(err error) error {
	if !ss.label || err == nil {
		return err
	}
	st := status.Convert(err)
	return status.Errorf(st.Code(), "server %s: %s", ss.name, st.Message())
}

func (ss *serverStream) stopped() bool {
	select {
	case <-ss.s.stopping:
		return true
	default:
		return false
	}
}

// run is the stream loop: nil when stopped by request, else the error that
// ends the subscription (Run wraps it with fromRPC).
func (ss *serverStream) run() error {
	b := newBackoff(ss.s.o.Backoff, ss.seed)
	everStarted := false
	for !ss.stopped() {
		// Each try fails at once while the server cannot be reached (no
		// wait-for-ready), so that every failed try reaches OnStreamError
		// and the application can say the server is down; the next try
		// comes after the backoff, by which time the connection has retried
		// with its own backoff (see DialOptions).
		started, err, protocol := ss.runStream()
		if ss.stopped() {
			return nil
		}
		if started {
			everStarted = true
			b.reset()
		}
		retry := !protocol && isRetryableStreamError(err) && (everStarted || !ss.s.o.FailFastInitialConnect)
		if !retry {
			if err == nil {
				err = status.Error(codes.Internal, "stream ended without error")
			}
			return ss.labelled(err)
		}
		delay := b.next()
		atomic.AddInt64(&ss.reconnects, 1)
		if ss.s.o.OnStreamError != nil {
			if err == nil {
				err = status.Error(codes.Unavailable, "stream ended by server")
			}
			ss.s.o.OnStreamError(ss.name, fromRPC(err), delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-ss.s.stopping:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return nil
}

// runStream reads one MessageStream until it ends. started: the fields
// arrived; protocol: the server broke the protocol (err says how).
func (ss *serverStream) runStream() (started bool, err error, protocol bool) {
	ctx, cancel := context.WithCancel(ss.s.streamCtx)
	defer cancel()
	req := &msgqv1.MessageStreamRequest{MaxUnacked: int32(ss.s.o.MaxUnacked), Group: ss.s.o.Group}
	req.Keyspace, req.Name = tableToWire(ss.s.table)
	stream, err := ss.stub.MessageStream(ctx, req, grpc.WaitForReady(false))
	if err != nil {
		return false, err, false
	}
	var schema *Schema
	for {
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return started, nil, false
			}
			return started, err, false
		}
		if schema == nil {
			schema, err = newSchema(resp.GetFields())
			if err != nil {
				return started, status.Errorf(codes.Internal, "bad first response from server: %v", err), true
			}
			started = true
			atomic.AddInt64(&ss.started, 1)
			ss.learnAckWait(ctx)
			if ss.s.o.OnConnected != nil {
				ss.s.o.OnConnected(ss.name, schema)
			}
		}
		now := time.Now()
		for _, row := range resp.GetRows() {
			msg, err := decodeRow(schema, row, ss.name, now)
			if err != nil {
				return started, status.Error(codes.Internal, err.Error()), true
			}
			atomic.AddInt64(&ss.received, 1)
			select {
			case ss.s.queue <- received{msg: msg, origin: ss}:
			case <-ss.s.stopping:
				return started, nil, false // the deferred cancel walks away
			}
		}
	}
}

// learnAckWait asks ListTables for the table's ack wait (the heartbeat's
// interval), unless it was given or heartbeats are off. A failed lookup
// keeps the last known value.
func (ss *serverStream) learnAckWait(ctx context.Context) {
	if !ss.heartbeat.enabled || ss.s.o.Heartbeat.AckWait > 0 {
		return
	}
	tables, err := ss.client.ListTables(ctx)
	if err == nil {
		if w, ok := AckWaitOf(tables, ss.s.table); ok {
			ss.heartbeat.setAckWait(w)
			return
		}
		err = fmt.Errorf("%w: ListTables has no loaded table %s with an ack wait; not extending deliveries",
			ErrUnknownTable, ss.s.table)
	}
	ss.heartbeatError(err)
}

func (ss *serverStream) sendAcks(ctx context.Context, ids []string) error {
	n, err := ss.client.AckGroup(ctx, ss.s.table, ss.s.o.Group, ids...)
	if err != nil {
		return err
	}
	atomic.AddInt64(&ss.ackCalls, 1)
	atomic.AddInt64(&ss.acked, n)
	return nil
}

func (ss *serverStream) nack(m *Message, r Result) {
	res, err := ss.client.nack(context.Background(), ss.s.table, ss.s.o.Group, []Delivery{m.Delivery()}, r)
	if err != nil {
		if ss.s.o.OnNackError != nil {
			ss.s.o.OnNackError(ss.name, err)
		}
		return
	}
	atomic.AddInt64(&ss.nackCalls, 1)
	atomic.AddInt64(&ss.retried, res.Retried)
	atomic.AddInt64(&ss.dead, res.Dead)
}

func (ss *serverStream) addStats(st *Stats) {
	st.Received += atomic.LoadInt64(&ss.received)
	st.Acked += atomic.LoadInt64(&ss.acked)
	st.AckCalls += atomic.LoadInt64(&ss.ackCalls)
	st.Retried += atomic.LoadInt64(&ss.retried)
	st.Dead += atomic.LoadInt64(&ss.dead)
	st.NackCalls += atomic.LoadInt64(&ss.nackCalls)
	hb := ss.heartbeat.statsNow()
	st.Extended += hb.extended
	st.Lost += hb.lost
	st.ExtendErrors += hb.errors
	st.StreamsStarted += atomic.LoadInt64(&ss.started)
	st.Reconnects += atomic.LoadInt64(&ss.reconnects)
}
