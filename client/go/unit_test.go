package msgq

// Unit tests without a server: row decoding and typing, trace context,
// results, backoff, the ack batcher and the heartbeat.

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"msgq.dev/client/go/internal/msgqv1"
)

func testSchema(t *testing.T, fields ...string) *Schema {
	t.Helper()
	var fs []*msgqv1.Field
	for _, f := range fields {
		p := strings.SplitN(f, ":", 2)
		fs = append(fs, &msgqv1.Field{Name: p[0], Type: p[1]})
	}
	s, err := newSchema(fs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func row(epoch int64, values ...interface{}) *msgqv1.Row {
	r := &msgqv1.Row{Epoch: epoch}
	for _, v := range values {
		if v == nil {
			r.Lengths = append(r.Lengths, -1)
			continue
		}
		s := v.(string)
		r.Lengths = append(r.Lengths, int64(len(s)))
		r.Values = append(r.Values, s...)
	}
	return r
}

func TestDecodeRowTypesEveryColumn(t *testing.T) {
	s := testSchema(t, "id:bigint", "i:int", "u:bigint", "f:double", "d:decimal", "s:varchar",
		"j:json", "b:varbinary", "bl:blob", "n:int", "e:varchar", "y:year", "bit:bit")
	m, err := decodeRow(s, row(3, "17", "-5", "18446744073709551615", "2.5", "12.30", "héllo",
		`{"a": 1}`, "\x00\xff", "blob", nil, "", "2024", "\x01"), "db1:1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.ID() != "17" || m.Epoch() != 3 || m.Server() != "db1:1" {
		t.Fatalf("id/epoch/server = %q/%d/%q", m.ID(), m.Epoch(), m.Server())
	}
	if got := m.Delivery(); got != (Delivery{ID: "17", Epoch: 3}) {
		t.Errorf("Delivery = %+v", got)
	}
	want := map[string]interface{}{
		"id": int64(17), "i": int64(-5), "u": uint64(18446744073709551615), "f": 2.5,
		"d": "12.30", "s": "héllo", "j": `{"a": 1}`, "b": []byte("\x00\xff"),
		"bl": []byte("blob"), "n": nil, "e": "", "y": int64(2024), "bit": []byte{1},
	}
	for name, w := range want {
		if got := m.Get(name); !reflect.DeepEqual(got, w) {
			t.Errorf("Get(%q) = %#v, want %#v", name, got, w)
		}
	}
	if !reflect.DeepEqual(m.Values(), want) {
		t.Errorf("Values() = %#v", m.Values())
	}
	if m.Get("missing") != nil || m.Has("missing") || !m.Has("n") {
		t.Error("missing column")
	}
	if !m.IsNull("n") || m.IsNull("e") || m.IsNull("missing") {
		t.Error("IsNull")
	}
	if v, ok := m.Text("e"); !ok || v != "" {
		t.Errorf("empty string: %q %v", v, ok)
	}
	if _, ok := m.Text("n"); ok {
		t.Error("NULL Text ok")
	}
	if m.Raw("n") != nil || m.Raw("e") == nil {
		t.Error("Raw must tell NULL from empty")
	}
	if m.Value(0) != int64(17) || m.Value(99) != nil {
		t.Error("Value by index")
	}
}

func TestDecodeRowAllEmptyValuesAreNotNull(t *testing.T) {
	s := testSchema(t, "id:varchar", "s:varchar")
	m, err := decodeRow(s, &msgqv1.Row{Lengths: []int64{0, 0}}, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.IsNull("s") || m.IsNull("id") {
		t.Error("empty values decoded as NULL")
	}
}

func TestDecodeRowRejectsMalformedRows(t *testing.T) {
	s := testSchema(t, "id:bigint", "m:json")
	for name, r := range map[string]*msgqv1.Row{
		"too few lengths": {Lengths: []int64{1}, Values: []byte("1")},
		"length below -1": {Lengths: []int64{1, -2}, Values: []byte("1")},
		"overrun":         {Lengths: []int64{1, 5}, Values: []byte("1ab")},
		"bytes left":      {Lengths: []int64{1, 1}, Values: []byte("1abc")},
		"NULL id":         {Lengths: []int64{-1, 1}, Values: []byte("a")},
		"negative epoch":  {Lengths: []int64{1, 1}, Values: []byte("1a"), Epoch: -1},
	} {
		if _, err := decodeRow(s, r, "", time.Now()); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := newSchema(nil); err == nil {
		t.Error("empty schema accepted")
	}
	if _, err := newSchema([]*msgqv1.Field{{Name: ""}}); err == nil {
		t.Error("empty column name accepted")
	}
}

func TestTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s := testSchema(t, "id:bigint", "traceparent:varchar", "tracestate:varchar")
	m, _ := decodeRow(s, row(0, "1", tp, "congo=t61rcWkgMzE"), "", time.Now())
	if m.TraceParent() != tp || m.TraceState() != "congo=t61rcWkgMzE" {
		t.Fatalf("TraceParent/TraceState = %q %q", m.TraceParent(), m.TraceState())
	}
	tc, ok := m.TraceContext()
	if !ok || tc.TraceIDString() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		tc.SpanIDString() != "00f067aa0ba902b7" || !tc.Sampled() || tc.State != "congo=t61rcWkgMzE" ||
		tc.TraceParent() != tp {
		t.Errorf("TraceContext = %+v %v", tc, ok)
	}
	for _, bad := range []string{
		"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
	} {
		if _, err := ParseTraceParent(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	if _, err := ParseTraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future"); err != nil {
		t.Errorf("future version: %v", err)
	}
	noTrace, _ := decodeRow(testSchema(t, "id:bigint"), row(0, "1"), "", time.Now())
	if _, ok := noTrace.TraceContext(); ok || noTrace.TraceParent() != "" {
		t.Error("trace context without a traceparent column")
	}
}

func TestResults(t *testing.T) {
	if r := Ack(); r.Kind() != KindAck || r != (Result{}) {
		t.Errorf("Ack = %v", r)
	}
	r := Retry(-time.Second, "x")
	if d, ok := r.Delay(); r.Kind() != KindRetry || !ok || d != 0 || r.Reason() != "x" {
		t.Errorf("Retry(-1s) = %v", r)
	}
	if _, ok := RetryBackoff("y").Delay(); ok {
		t.Error("RetryBackoff has a delay")
	}
	if r := Fail(errors.New("boom")); r.Kind() != KindRetry || r.Reason() != "boom" {
		t.Errorf("Fail = %v", r)
	}
	if _, ok := Fail(errors.New("boom")).Delay(); ok {
		t.Error("Fail has a delay")
	}
	if Fail(nil).Kind() != KindAck || Dead("z").Kind() != KindDead {
		t.Error("Fail(nil)/Dead")
	}
	h := HandlerFunc(func(context.Context, *Message) error { return errors.New("e") })
	if h(context.Background(), nil).Kind() != KindRetry {
		t.Error("HandlerFunc")
	}
}

func TestBackoffGrowsCappedWithJitter(t *testing.T) {
	b := newBackoff(BackoffOptions{Initial: 100 * time.Millisecond, Max: time.Second}, 42)
	nominal := []float64{0.1, 0.2, 0.4, 0.8, 1, 1, 1}
	for i, n := range nominal {
		d := b.next().Seconds()
		if d < n*0.8-1e-9 || d > n*1.2+1e-9 || d > 1 {
			t.Errorf("delay %d = %v, want %v +-20%% capped at 1s", i, d, n)
		}
	}
	b.reset()
	if d := b.next().Seconds(); d < 0.08 || d > 0.12 {
		t.Errorf("after reset: %v", d)
	}
	a1, a2 := newBackoff(BackoffOptions{}, 7), newBackoff(BackoffOptions{}, 7)
	for i := 0; i < 5; i++ {
		if a1.next() != a2.next() {
			t.Fatal("same seed, different delays")
		}
	}
}

type sentBatches struct {
	mu      sync.Mutex
	batches [][]string
	fail    int // fail this many sends with err
	err     error
}

func (s *sentBatches) send(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return s.err
	}
	s.batches = append(s.batches, ids)
	return nil
}

func (s *sentBatches) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.batches {
		out = append(out, b...)
	}
	sort.Strings(out)
	return out
}

func TestAckBatcherBatchesBySizeAndDelay(t *testing.T) {
	s := &sentBatches{}
	b := newAckBatcher(AckBatchOptions{MaxBatch: 3, MaxDelay: time.Hour}, s.send, nil)
	for _, id := range []string{"1", "2", "3", "4"} {
		b.add(id)
	}
	if !eventually(5*time.Second, func() bool { return len(s.all()) == 3 }) {
		t.Fatalf("a full batch was not sent: %v", s.all())
	}
	time.Sleep(50 * time.Millisecond)
	if len(s.all()) != 3 {
		t.Fatalf("the fourth id did not wait for its delay: %v", s.batches)
	}
	b.close(context.Background())
	if got := s.all(); !reflect.DeepEqual(got, []string{"1", "2", "3", "4"}) {
		t.Errorf("after close: %v", got)
	}
	if b.add("5") {
		t.Error("add after close")
	}

	s2 := &sentBatches{}
	b2 := newAckBatcher(AckBatchOptions{MaxBatch: 100, MaxDelay: 30 * time.Millisecond}, s2.send, nil)
	b2.add("a")
	start := time.Now()
	if !eventually(5*time.Second, func() bool { return len(s2.all()) == 1 }) {
		t.Fatal("delay never sent the batch")
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	b2.close(context.Background())
}

func TestAckBatcherRetriesRetryableErrorsOnly(t *testing.T) {
	var errs []error
	var mu sync.Mutex
	onError := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	s := &sentBatches{fail: 2, err: status.Error(codes.Unavailable, "down")}
	b := newAckBatcher(AckBatchOptions{MaxDelay: time.Millisecond, MaxAttempts: 3}, s.send, onError)
	b.add("1")
	b.close(context.Background())
	if got := s.all(); !reflect.DeepEqual(got, []string{"1"}) || len(errs) != 2 {
		t.Errorf("UNAVAILABLE twice then OK: sent %v, errors %v", got, errs)
	}

	s = &sentBatches{fail: 5, err: status.Error(codes.Unavailable, "down")}
	b = newAckBatcher(AckBatchOptions{MaxDelay: time.Millisecond, MaxAttempts: 3}, s.send, nil)
	b.add("1")
	b.close(context.Background())
	if s.fail != 2 {
		t.Errorf("attempts: %d failures left of 5, want 2", s.fail)
	}

	s = &sentBatches{fail: 5, err: status.Error(codes.NotFound, "no table")}
	b = newAckBatcher(AckBatchOptions{MaxDelay: time.Millisecond}, s.send, nil)
	b.add("1")
	b.close(context.Background())
	if s.fail != 4 {
		t.Errorf("NOT_FOUND was retried: %d failures left of 5", s.fail)
	}
}

func TestAckBatcherCloseGivesUpWithItsContext(t *testing.T) {
	block := make(chan struct{})
	send := func(ctx context.Context, ids []string) error {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-block:
			return nil
		}
	}
	b := newAckBatcher(AckBatchOptions{MaxDelay: time.Millisecond}, send, nil)
	b.add("1")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	b.close(ctx)
	if time.Since(start) > 5*time.Second {
		t.Errorf("close took %v", time.Since(start))
	}
	close(block)
}

type fakeExtends struct {
	mu    sync.Mutex
	calls []time.Duration
	reply int64
	err   error
}

func (f *fakeExtends) extend(_ context.Context, d Delivery, dur time.Duration) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, dur)
	return f.reply, f.err
}

func (f *fakeExtends) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func TestHeartbeatExtendsUntilTheCap(t *testing.T) {
	f := &fakeExtends{reply: 1}
	h := newHeartbeat(HeartbeatOptions{AckWait: 200 * time.Millisecond, MaxExtension: 300 * time.Millisecond}, f.extend, nil)
	h.run()
	defer h.close()
	ticket := h.begin(Delivery{ID: "1"}, time.Now())
	// Due every 100ms; held at most until 200+300ms after receipt: 4 extends.
	time.Sleep(800 * time.Millisecond)
	h.end(ticket)
	n := f.count()
	if n < 3 || n > 5 {
		t.Errorf("%d extends, want about 4", n)
	}
	f.mu.Lock()
	for _, d := range f.calls {
		if d <= 0 || d > 200*time.Millisecond {
			t.Errorf("extend by %v", d)
		}
	}
	f.mu.Unlock()
	if st := h.statsNow(); st.extended != int64(n) {
		t.Errorf("stats %+v", st)
	}
}

func TestHeartbeatStopsOnLossAndWaitsForAckWait(t *testing.T) {
	f := &fakeExtends{reply: 0}
	h := newHeartbeat(HeartbeatOptions{}, f.extend, nil)
	h.run()
	defer h.close()
	h.begin(Delivery{ID: "1"}, time.Now())
	time.Sleep(100 * time.Millisecond)
	if f.count() != 0 {
		t.Fatal("extended without an ack wait")
	}
	h.setAckWait(100 * time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	if n := f.count(); n != 1 {
		t.Errorf("%d extends of a lost delivery, want 1", n)
	}
	if st := h.statsNow(); st.lost != 1 {
		t.Errorf("stats %+v", st)
	}

	off := newHeartbeat(HeartbeatOptions{MaxExtension: -1, AckWait: time.Millisecond}, f.extend, nil)
	off.run()
	if off.begin(Delivery{ID: "2"}, time.Now()) != 0 {
		t.Error("a disabled heartbeat tracks deliveries")
	}
	off.close()
}
