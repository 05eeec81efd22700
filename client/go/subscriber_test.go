package msgq

// Subscriber against a real msgqd and MariaDB (see harness_test.go).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"msgq.dev/client/go/internal/msgqv1"
)

// seen is a delivery a handler saw.
type seen struct {
	server string
	id     string
	epoch  int64
	at     time.Time // handler called
	// read from the stream
	received time.Time
}

type recorder struct {
	mu   sync.Mutex
	seen []seen
}

func (r *recorder) add(m *Message) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, seen{server: m.Server(), id: m.ID(), epoch: m.Epoch(), at: time.Now(), received: m.Received()})
	n := 0
	for _, s := range r.seen {
		if s.id == m.ID() && s.server == m.Server() {
			n++
		}
	}
	return n // deliveries of this message so far, this one included
}

func (r *recorder) all() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.seen...)
}

func (r *recorder) epochs(id string) []int64 {
	var out []int64
	for _, s := range r.all() {
		if s.id == id {
			out = append(out, s.epoch)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func acked(t testing.TB, db, table string) int64 {
	return sqlInt(t, fmt.Sprintf("SELECT COUNT(*) FROM %s.%s WHERE time_acked IS NOT NULL", db, table))
}

func TestHandlerOutcomes(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "jobs", "vt_ack_wait=10,vt_min_backoff=0.3,vt_max_backoff=0.5", "")
	srv := serve(t, db)
	table := Table{Keyspace: db, Name: "jobs"}
	insertRange(t, db, "jobs", 1, 5)

	rec := &recorder{}
	handler := func(ctx context.Context, m *Message) Result {
		n := rec.add(m)
		switch m.ID() {
		case "1":
			return Ack()
		case "2": // retried after 300ms, then acked
			if n == 1 {
				return Retry(300*time.Millisecond, "try later")
			}
			return Ack()
		case "3": // dead at once
			return Dead("cannot parse")
		case "4": // an error, then a panic, both retried with the backoff
			switch n {
			case 1:
				return Fail(errors.New("backend down"))
			case 2:
				panic("kaboom")
			}
			return Ack()
		case "5": // HandlerFunc's error path
			return HandlerFunc(func(context.Context, *Message) error {
				if n == 1 {
					return errors.New("flaky")
				}
				return nil
			})(ctx, m)
		}
		return Dead("unexpected id " + m.ID())
	}
	sub, err := subscribe([]string{srv.addr}, table, handler, Options{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)

	if !eventually(30*time.Second, func() bool { return acked(t, db, "jobs") == 4 }) {
		t.Fatalf("acked %d of 4; seen %+v", acked(t, db, "jobs"), rec.all())
	}
	for id, want := range map[string][]int64{"1": {0}, "2": {0, 1}, "3": {0}, "4": {0, 1, 2}, "5": {0, 1}} {
		if got := rec.epochs(id); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("id %s seen with epochs %v, want %v", id, got, want)
		}
	}
	// The retry with a delay came back after about that delay.
	var first, second time.Time
	for _, s := range rec.all() {
		if s.id == "2" && s.epoch == 0 {
			first = s.at
		}
		if s.id == "2" && s.epoch == 1 {
			second = s.at
		}
	}
	if gap := second.Sub(first); gap < 250*time.Millisecond || gap > 5*time.Second {
		t.Errorf("Retry(300ms) came back after %v", gap)
	}

	// Dead: in ListDead with its reason, not acked; the panic's reason was
	// stored in last_error before the ack.
	c, err := NewClient(srv.addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dead, err := c.ListDead(context.Background(), table, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].ID != "3" || dead[0].LastError != "cannot parse" || dead[0].Epoch != 1 ||
		dead[0].TimeDead.IsZero() || dead[0].TimeCreated.IsZero() {
		t.Errorf("ListDead = %+v", dead)
	}
	if got := sqlExec(t, "SELECT last_error FROM "+db+".jobs WHERE id = 4"); got != "handler panicked: kaboom" {
		t.Errorf("last_error of 4 = %q", got)
	}

	// Redrive brings 3 back with epoch 0; this time it dies again.
	n, err := c.Redrive(context.Background(), table, "3")
	if err != nil || n != 1 {
		t.Fatalf("Redrive = %d, %v", n, err)
	}
	if !eventually(10*time.Second, func() bool { return len(rec.epochs("3")) == 2 }) {
		t.Fatalf("redriven message not redelivered: %v", rec.epochs("3"))
	}
	if got := rec.epochs("3"); got[1] != 0 {
		t.Errorf("redriven with epoch %d", got[1])
	}

	// The redriven message's second death is counted once its nack returns.
	eventually(10*time.Second, func() bool { return sub.Stats().Dead == 2 })
	st := sub.Stats()
	if st.Handled != 4 || st.Failed != 6 || st.Dead != 2 || st.Acked != 4 || st.Retried != 4 ||
		st.StreamsStarted != 1 || st.Received != int64(rec.count()) {
		t.Errorf("stats %+v (seen %d)", st, rec.count())
	}
}

func TestHeartbeatKeepsSlowHandlersMessagesPastTheAckWait(t *testing.T) {
	db := newDatabase(t)
	for _, name := range []string{"kept", "unkept", "capped"} {
		createTable(t, db, name, "vt_ack_wait=1,vt_poller_interval=0.2", "")
	}
	srv := serve(t, db)
	for _, name := range []string{"kept", "unkept", "capped"} {
		insertRange(t, db, name, 1, 1)
	}

	// Each handler holds its first delivery for 3.5 s, 3.5 ack waits.
	type run struct {
		rec *recorder
		sub *runningSub
	}
	runs := map[string]*run{}
	for name, hb := range map[string]HeartbeatOptions{
		"kept":   {},                                             // learns the ack wait from ListTables
		"unkept": {MaxExtension: -1},                             // no heartbeat: sent again meanwhile
		"capped": {MaxExtension: 1 * time.Second, Fraction: 0.3}, // held until about 2 s
	} {
		r := &run{rec: &recorder{}}
		rec := r.rec
		handler := func(ctx context.Context, m *Message) Result {
			if rec.add(m) == 1 {
				select {
				case <-time.After(3500 * time.Millisecond):
				case <-ctx.Done():
				}
			}
			return Ack()
		}
		var err error
		r.sub, err = subscribe([]string{srv.addr}, Table{Keyspace: db, Name: name}, handler,
			Options{Concurrency: 2, Heartbeat: hb})
		if err != nil {
			t.Fatal(err)
		}
		runs[name] = r
	}
	for _, r := range runs {
		defer closeSub(t, r.sub)
	}
	if !eventually(30*time.Second, func() bool {
		return acked(t, db, "kept") == 1 && acked(t, db, "unkept") == 1 && acked(t, db, "capped") == 1
	}) {
		t.Fatal("not all acked")
	}
	if got := runs["kept"].rec.epochs("1"); len(got) != 1 {
		t.Errorf("with heartbeats the message was delivered %d times (epochs %v), want once", len(got), got)
	}
	if st := runs["kept"].sub.Stats(); st.Extended < 3 || st.Lost != 0 {
		t.Errorf("kept: stats %+v, want >= 3 extends", st)
	}
	if got := runs["unkept"].rec.epochs("1"); len(got) < 2 {
		t.Errorf("without heartbeats the message was delivered %d times, want it sent again", len(got))
	}
	capped := runs["capped"].rec.all()
	if len(capped) < 2 {
		t.Errorf("capped at 1s past the ack wait: delivered %d times, want again", len(capped))
	} else if gap := capped[1].at.Sub(capped[0].at); gap < 1500*time.Millisecond || gap > 3400*time.Millisecond {
		t.Errorf("capped: sent again after %v, want about 2s (ack wait + max extension)", gap)
	}
}

func TestFanInSettlesEachMessageOnItsServer(t *testing.T) {
	// Two shards: two databases with the same table and the same ids, one
	// msgqd each. Acking id 5 on the wrong shard would ack another message.
	db1, db2 := newDatabase(t), newDatabase(t)
	for _, db := range []string{db1, db2} {
		createTable(t, db, "orders", "", "")
		insertRange(t, db, "orders", 1, 20)
	}
	s1, s2 := startMsgqd(t, db1, "127.0.0.1:0"), startMsgqd(t, db2, "127.0.0.1:0")
	rec := &recorder{}
	// The default keyspace: each server's first (only) database.
	sub, err := subscribe([]string{s1.addr, s2.addr}, Table{Name: "orders"},
		func(ctx context.Context, m *Message) Result {
			rec.add(m)
			if m.ID() == "7" && m.Server() == s2.addr {
				return Dead("only on shard 2")
			}
			return Ack()
		}, Options{Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	if !eventually(30*time.Second, func() bool {
		return acked(t, db1, "orders") == 20 && acked(t, db2, "orders") == 19
	}) {
		t.Fatalf("acked %d and %d, want 20 and 19", acked(t, db1, "orders"), acked(t, db2, "orders"))
	}
	per := map[string]int{}
	for _, s := range rec.all() {
		per[s.server]++
	}
	if per[s1.addr] != 20 || per[s2.addr] != 20 {
		t.Errorf("deliveries per server %v", per)
	}
	if got := sqlExec(t, "SELECT id FROM "+db2+".orders WHERE time_acked IS NULL AND time_next IS NULL"); got != "7" {
		t.Errorf("dead on shard 2: %q", got)
	}
	if n := sqlInt(t, "SELECT COUNT(*) FROM "+db1+".orders WHERE time_next IS NULL AND time_acked IS NULL"); n != 0 {
		t.Errorf("%d dead on shard 1", n)
	}
	if st := sub.Stats(); st.StreamsStarted != 2 || st.Acked != 39 || st.Dead != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRestartMidStreamLosesNothingAndNeverRedeliversInsideTheAckWait(t *testing.T) {
	const ackWait = 3 * time.Second
	db := newDatabase(t)
	createTable(t, db, "events", "vt_ack_wait=3,vt_poller_interval=0.3", "")
	insertRange(t, db, "events", 1, 200)
	srv := serve(t, db)
	table := Table{Keyspace: db, Name: "events"}

	rec := &recorder{}
	var reconnects sync.Map
	sub, err := subscribe([]string{srv.addr}, table, func(ctx context.Context, m *Message) Result {
		rec.add(m)
		time.Sleep(10 * time.Millisecond)
		return Ack()
	}, Options{Concurrency: 2, MaxUnacked: 20, Backoff: BackoffOptions{Initial: 50 * time.Millisecond},
		OnStreamError: func(server string, err error, retryIn time.Duration) {
			reconnects.Store(status.Code(err), true)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)

	if !eventually(20*time.Second, func() bool { return rec.count() >= 40 }) {
		t.Fatalf("only %d handled before the restart", rec.count())
	}
	srv = srv.restart(t, syscall.SIGTERM) // a graceful restart (deploy)
	if !eventually(60*time.Second, func() bool { return acked(t, db, "events") == 200 }) {
		t.Fatalf("acked %d of 200 after the restart", acked(t, db, "events"))
	}
	// Nothing lost: every id handled; a message seen twice only after its
	// ack wait (the ack of the first was lost with the server).
	last := map[string]seen{}
	for _, s := range rec.all() {
		if prev, ok := last[s.id]; ok {
			if gap := s.received.Sub(prev.received); gap < ackWait-300*time.Millisecond {
				t.Errorf("id %s handled again after %v (epochs %d, %d), inside the ack wait", s.id, gap, prev.epoch, s.epoch)
			}
		}
		last[s.id] = s
	}
	if len(last) != 200 {
		t.Errorf("%d distinct ids handled, want 200", len(last))
	}
	st := sub.Stats()
	if st.StreamsStarted < 2 || st.Reconnects < 1 {
		t.Errorf("stats %+v: want a second stream after the restart", st)
	}
	if _, ok := reconnects.Load(codes.Unavailable); !ok {
		t.Error("OnStreamError never saw UNAVAILABLE")
	}
	t.Logf("handled %d deliveries of 200 messages; stats %+v", rec.count(), st)
}

func TestKilledServerLosesNothing(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "events", "vt_ack_wait=2,vt_poller_interval=0.3", "")
	insertRange(t, db, "events", 1, 100)
	srv := serve(t, db)
	rec := &recorder{}
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "events"},
		func(ctx context.Context, m *Message) Result {
			rec.add(m)
			time.Sleep(10 * time.Millisecond)
			return Ack()
		}, Options{Concurrency: 2, MaxUnacked: 10, Backoff: BackoffOptions{Initial: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	if !eventually(20*time.Second, func() bool { return rec.count() >= 20 }) {
		t.Fatalf("only %d handled before the kill", rec.count())
	}
	srv = srv.restart(t, syscall.SIGKILL)
	if !eventually(60*time.Second, func() bool { return acked(t, db, "events") == 100 }) {
		t.Fatalf("acked %d of 100 after kill -9", acked(t, db, "events"))
	}
	ids := map[string]bool{}
	for _, s := range rec.all() {
		ids[s.id] = true
	}
	if len(ids) != 100 {
		t.Errorf("%d distinct ids handled", len(ids))
	}
}

func TestRunDrainsRunningHandlersAndFlushesTheirAcks(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "work", "", "")
	insertRange(t, db, "work", 1, 10)
	srv := serve(t, db)

	started := make(chan string, 10)
	var finished sync.Map
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "work"},
		func(ctx context.Context, m *Message) Result {
			started <- m.ID()
			time.Sleep(time.Second)
			finished.Store(m.ID(), true)
			return Ack()
		}, Options{Concurrency: 3, MaxUnacked: 3,
			// Acks wait for companions far longer than the test: only the
			// drain sends them.
			AckBatch: AckBatchOptions{MaxDelay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 3; i++ {
		select {
		case id := <-started:
			ids = append(ids, id)
		case <-time.After(20 * time.Second):
			t.Fatal("handlers did not start")
		}
	}
	start := time.Now()
	if err := sub.stop(t); err != nil {
		t.Fatalf("Run after its context ended: %v, want nil", err)
	}
	took := time.Since(start)
	for _, id := range ids {
		if _, ok := finished.Load(id); !ok {
			t.Errorf("Run returned before the handler of %s finished", id)
		}
	}
	if took > 5*time.Second {
		t.Errorf("the drain took %v", took)
	}
	// The acks of the three went out in the drain; nothing else was taken.
	got := sqlExec(t, "SELECT GROUP_CONCAT(id ORDER BY id) FROM "+db+".work WHERE time_acked IS NOT NULL")
	want := ""
	for i, id := range sortNumeric(ids) {
		if i > 0 {
			want += ","
		}
		want += id
	}
	if got != want {
		t.Errorf("acked after the drain: %q, want %q", got, want)
	}
	if n := len(started); n != 0 {
		t.Errorf("%d handlers started after the context ended", n)
	}
	if err := sub.Run(context.Background()); err != ErrClosed {
		t.Errorf("second Run: %v, want ErrClosed", err)
	}
}

func sortNumeric(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i])
		b, _ := strconv.Atoi(out[j])
		return a < b
	})
	return out
}

func TestRunGivesUpAfterTheDrainTimeoutAndCancelsHandlers(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "stuck", "", "")
	insertRange(t, db, "stuck", 1, 1)
	srv := serve(t, db)
	started := make(chan struct{}, 1)
	canceled := make(chan struct{})
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "stuck"},
		func(ctx context.Context, m *Message) Result {
			started <- struct{}{}
			<-ctx.Done()
			close(canceled)
			return Fail(ctx.Err())
		}, Options{DrainTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("handler did not start")
	}
	start := time.Now()
	err = sub.stop(t)
	const want = "msgq: handlers still running after the drain timeout of 300ms: context deadline exceeded"
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
		t.Errorf("Run = %v, want %q", err, want)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("Run returned %v after its context ended, want 300ms and a little", took)
	}
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Error("the handler's context was not canceled")
	}
}

func TestFatalErrorsEndRun(t *testing.T) {
	db := newDatabase(t)
	srv := serve(t, db)
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "no_such_table"},
		func(context.Context, *Message) Result { return Ack() }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.cancel()
	select {
	case <-sub.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("an unknown table did not end Run")
	}
	if !errors.Is(sub.Err(), ErrUnknownTable) || status.Code(sub.Err()) != codes.NotFound {
		t.Errorf("Run = %v, want ErrUnknownTable (NOT_FOUND)", sub.Err())
	}

	// Fail fast on a first connection to nobody.
	sub2, err := subscribe([]string{"127.0.0.1:1"}, Table{Name: "t"},
		func(context.Context, *Message) Result { return Ack() }, Options{FailFastInitialConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.cancel()
	select {
	case <-sub2.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("fail fast: Run did not return")
	}
	if !errors.Is(sub2.Err(), ErrUnavailable) || status.Code(sub2.Err()) != codes.Unavailable {
		t.Errorf("fail fast: Run = %v, want ErrUnavailable (UNAVAILABLE)", sub2.Err())
	}

	for name, f := range map[string]func() error{
		"no servers": func() error {
			_, err := subscribe(nil, Table{Name: "t"}, func(context.Context, *Message) Result { return Ack() }, Options{})
			return err
		},
		"empty table": func() error {
			_, err := subscribe([]string{"a:1"}, Table{}, func(context.Context, *Message) Result { return Ack() }, Options{})
			return err
		},
		"nil handler": func() error { _, err := subscribe([]string{"a:1"}, Table{Name: "t"}, nil, Options{}); return err },
		"twice": func() error {
			_, err := subscribe([]string{"a:1", "a:1"}, Table{Name: "t"}, func(context.Context, *Message) Result { return Ack() }, Options{})
			return err
		},
		"negative drain timeout": func() error {
			_, err := subscribe([]string{"a:1"}, Table{Name: "t"}, func(context.Context, *Message) Result { return Ack() },
				Options{DrainTimeout: -time.Second})
			return err
		},
	} {
		err := f()
		if _, isStatus := status.FromError(err); !errors.Is(err, ErrInvalidArgument) || isStatus {
			t.Errorf("%s: %v, want a plain error wrapping ErrInvalidArgument", name, err)
		}
	}
}

func TestTypedColumnsAndTraceContextEndToEnd(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "traced", "",
		"traceparent varchar(55), tracestate varchar(512), i int, u bigint unsigned, f double, "+
			"d decimal(10,2), s varchar(20), b varbinary(8), n int")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sqlExec(t, "INSERT INTO "+db+".traced (id, message, traceparent, tracestate, i, u, f, d, s, b, n) VALUES "+
		"(1, '{\"x\": 1}', '"+tp+"', 'vendor=abc', -3, 18446744073709551615, 0.25, 12.50, 'héllo', 0x00ff, NULL), "+
		"(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '', NULL, NULL)")
	srv := serve(t, db)
	got := make(chan *Message, 2)
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "traced"},
		func(ctx context.Context, m *Message) Result { got <- m; return Ack() }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	msgs := map[string]*Message{}
	for len(msgs) < 2 {
		select {
		case m := <-got:
			msgs[m.ID()] = m
		case <-time.After(20 * time.Second):
			t.Fatal("messages not delivered")
		}
	}
	m := msgs["1"]
	want := map[string]interface{}{
		"id": int64(1), "i": int64(-3), "u": uint64(18446744073709551615), "f": 0.25, "d": "12.50",
		"s": "héllo", "b": []byte{0, 0xff}, "n": nil, "message": `{"x": 1}`,
	}
	for k, w := range want {
		if g := m.Get(k); fmt.Sprintf("%#v", g) != fmt.Sprintf("%#v", w) {
			t.Errorf("Get(%q) = %#v, want %#v", k, g, w)
		}
	}
	if m.Has("time_dead") {
		t.Error("time_dead is streamed")
	}
	tc, ok := m.TraceContext()
	if !ok || tc.TraceParent() != tp || tc.State != "vendor=abc" || m.TraceParent() != tp {
		t.Errorf("TraceContext = %+v %v", tc, ok)
	}
	m2 := msgs["2"]
	if _, ok := m2.TraceContext(); ok || m2.Get("message") != nil || m2.Get("s") != "" || !m2.IsNull("traceparent") {
		t.Errorf("message 2: %v", m2.Values())
	}
}

func TestPrefetchLimitsUnackedMessages(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "pf", "", "")
	insertRange(t, db, "pf", 1, 20)
	srv := serve(t, db)
	release := make(chan struct{})
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "pf"},
		func(ctx context.Context, m *Message) Result {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return Ack()
		}, Options{Concurrency: 2, MaxUnacked: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	if !eventually(20*time.Second, func() bool { return sub.Stats().Received == 4 }) {
		t.Fatalf("received %d", sub.Stats().Received)
	}
	time.Sleep(500 * time.Millisecond)
	if n := sub.Stats().Received; n != 4 {
		t.Errorf("received %d with max_unacked 4", n)
	}
	close(release)
	if !eventually(20*time.Second, func() bool { return acked(t, db, "pf") == 20 }) {
		t.Errorf("acked %d of 20", acked(t, db, "pf"))
	}
}

// A consumer group (docs/design/consumer-groups.md): Options.Group is sent
// on the stream and on the acks. The group gets the inserts committed
// after its creation, in commit order; its acks move its floor in
// msgq_groups and are its own: the default group's rows stay unsent and
// unacked.
func TestGroupSubscriberReadsAndAcksItsGroup(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "grp", "", "")
	srv := serve(t, db)
	table := Table{Keyspace: db, Name: "grp"}
	waitLoaded(t, srv.addr, table)
	c, err := NewClient(srv.addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.stub.CreateGroup(ctx, &msgqv1.CreateGroupRequest{
		Keyspace: db, Name: "grp", Group: "billing"}); err != nil {
		t.Fatal(err)
	}
	floor := func() string {
		return sqlExec(t, fmt.Sprintf("SELECT floor_gtid FROM %s.msgq_groups "+
			"WHERE table_name = 'grp' AND group_name = 'billing'", db))
	}
	created := floor()
	for i := 1; i <= 3; i++ { // three transactions
		insertRange(t, db, "grp", i, i)
	}
	var mu sync.Mutex
	var ids []string
	sub, err := subscribe([]string{srv.addr}, table,
		func(ctx context.Context, m *Message) Result {
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, m.ID())
			return Ack()
		}, Options{Group: "billing", AckBatch: AckBatchOptions{MaxBatch: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	if !eventually(20*time.Second, func() bool { return sub.Stats().Acked == 3 }) {
		t.Fatalf("acked %d of 3 for the group", sub.Stats().Acked)
	}
	mu.Lock()
	if fmt.Sprint(ids) != "[1 2 3]" {
		t.Errorf("the group got %v, want [1 2 3] in commit order", ids)
	}
	mu.Unlock()
	// The first two transactions are settled; the third is the last one
	// read (more of its rows could come), so the floor is below it.
	if f := floor(); f == created {
		t.Errorf("floor still %q after the group's acks", f)
	}
	if n, err := c.AckGroup(ctx, table, "billing", "1", "2", "3"); err != nil || n != 0 {
		t.Errorf("acking again for the group: %d, %v; want 0", n, err)
	}
	if n := sqlInt(t, fmt.Sprintf("SELECT COUNT(*) FROM %s.grp WHERE "+
		"time_acked IS NULL AND epoch = 0", db)); n != 3 {
		t.Errorf("%d rows untouched by the default group, want 3", n)
	}
	_, err = c.AckGroup(ctx, table, "nope", "1")
	want := fmt.Sprintf("group \"nope\" of `%s`.`grp` not found; its groups: billing", db)
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != want {
		t.Errorf("unknown group: %v; want NOT_FOUND %q", err, want)
	}
}
