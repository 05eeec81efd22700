package msgq

// The trace convention (docs/api.md#trace-context-from-producer-to-consumer):
// the producer helpers, TraceContext's OpenTelemetry SpanContext, and one
// CONSUMER span per delivery recorded with the OpenTelemetry SDK's in-memory
// SpanRecorder (Debian's golang-opentelemetry-otel-dev), against a real msgqd
// and MariaDB.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func mustTraceID(t testing.TB, s string) trace.TraceID {
	t.Helper()
	id, err := trace.TraceIDFromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustSpanID(t testing.TB, s string) trace.SpanID {
	t.Helper()
	id, err := trace.SpanIDFromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func attrs(s sdktrace.ReadOnlySpan) map[string]interface{} {
	out := map[string]interface{}{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

func TestTraceContextToOpenTelemetryAndBack(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tc, err := ParseTraceParent(tp)
	if err != nil {
		t.Fatal(err)
	}
	tc.State = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
	sc := tc.SpanContext()
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() ||
		sc.TraceID() != mustTraceID(t, "4bf92f3577b34da6a3ce929d0e0e4736") ||
		sc.SpanID() != mustSpanID(t, "00f067aa0ba902b7") ||
		sc.TraceState().String() != tc.State {
		t.Errorf("SpanContext = %+v", sc)
	}
	// The producer side: the traceparent of a context's span, and back.
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if got := TraceParentFromContext(ctx); got != tp {
		t.Errorf("TraceParentFromContext = %q", got)
	}
	if got := TraceStateFromContext(ctx); got != tc.State {
		t.Errorf("TraceStateFromContext = %q", got)
	}
	if TraceParentFromContext(context.Background()) != "" || TraceStateFromContext(context.Background()) != "" {
		t.Error("a context without a span has a traceparent")
	}
	// A tracestate that does not parse is dropped, the rest kept.
	tc.State = "not a tracestate"
	if sc := tc.SpanContext(); !sc.IsValid() || sc.TraceState().Len() != 0 {
		t.Errorf("bad tracestate: %+v", sc)
	}
}

func TestTracerOptions(t *testing.T) {
	if newTracer(Options{NoTracing: true}) != nil {
		t.Error("NoTracing has a tracer")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := newTracer(Options{TracerProvider: tp}).Start(context.Background(), "x")
	span.End()
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("explicit provider: %d spans", n)
	}
	// Without a provider set by the application, OpenTelemetry's global one
	// is a no-op (the integration test below restores a no-op one).
	_, span = newTracer(Options{}).Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("the default global provider records spans")
	}
	span.End()
}

// A producer span -> the INSERT writing traceparent/tracestate -> msgqd ->
// one CONSUMER span per delivery from the global TracerProvider, each a
// child of (and linked to) the producer's span; a retried delivery is a
// second span with its epoch; a handler's own span is the consumer span's
// child.
func TestConsumerSpansFollowTheProducersTraceContext(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "traced", "vt_ack_wait=10,vt_min_backoff=0.2,vt_max_backoff=0.4",
		"traceparent varchar(55), tracestate varchar(512)")
	table := Table{Keyspace: db, Name: "traced"}

	rec := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(provider)
	defer otel.SetTracerProvider(trace.NewNoopTracerProvider())
	tracer := otel.Tracer("producer-app")

	// The producer's own parent carries a tracestate, which its span keeps.
	upstreamState, err := trace.ParseTraceState("msgq=test,other=1")
	if err != nil {
		t.Fatal(err)
	}
	upstream := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: mustTraceID(t, "0af7651916cd43dd8448eb211c80319c"), SpanID: mustSpanID(t, "b7ad6b7169203331"),
		TraceFlags: trace.FlagsSampled, TraceState: upstreamState, Remote: true,
	}))
	ctx, producer := tracer.Start(upstream, "enqueue order", trace.WithSpanKind(trace.SpanKindProducer))
	tp, ts := TraceParentFromContext(ctx), TraceStateFromContext(ctx)
	sqlExec(t, fmt.Sprintf("INSERT INTO %s.traced (id, message, traceparent, tracestate) VALUES "+
		"(1, '{\"order\": 7}', '%s', '%s'), (2, '{}', NULL, NULL), (3, '{}', 'garbage', NULL), "+
		"(4, '{}', '%s', NULL)", db, tp, ts, tp))
	producer.End()
	psc := producer.SpanContext()
	if want := fmt.Sprintf("00-%s-%s-01", psc.TraceID(), psc.SpanID()); tp != want || ts != "msgq=test,other=1" {
		t.Fatalf("producer wrote %q %q, want %q", tp, ts, want)
	}

	srv := serve(t, db)
	rec2 := &recorder{}
	sub, err := subscribe([]string{srv.addr}, table, func(ctx context.Context, m *Message) Result {
		n := rec2.add(m)
		switch m.ID() {
		case "1":
			if n == 1 {
				return Retry(200*time.Millisecond, "first try fails")
			}
			// The handler's ctx carries the consumer span.
			_, child := otel.Tracer("handler").Start(ctx, "charge card")
			child.End()
			return Ack()
		case "2":
			return Dead("no order")
		case "4":
			if n == 1 {
				panic("kaboom")
			}
		}
		return Ack()
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, func() bool { return acked(t, db, "traced") == 3 && sub.Stats().Dead == 1 }) {
		t.Fatalf("acked %d, stats %+v, seen %+v", acked(t, db, "traced"), sub.Stats(), rec2.all())
	}
	closeSub(t, sub)

	type key struct {
		id    string
		epoch int64
	}
	consumer := map[key]sdktrace.ReadOnlySpan{}
	var child sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "process traced":
			a := attrs(s)
			k := key{fmt.Sprint(a["messaging.message.id"]), a["messaging.msgq.epoch"].(int64)}
			if _, dup := consumer[k]; dup {
				t.Errorf("two spans for %+v", k)
			}
			consumer[k] = s
		case "charge card":
			child = s
		}
	}
	want := map[key]struct {
		outcome, description string
		traced               bool
		errors               int
	}{
		{"1", 0}: {"retry", "first try fails", true, 0},
		{"1", 1}: {"ack", "", true, 0},
		{"2", 0}: {"dead", "no order", false, 0},
		{"3", 0}: {"ack", "", false, 0},
		{"4", 0}: {"retry", "handler panicked: kaboom", true, 1},
		{"4", 1}: {"ack", "", true, 0},
	}
	if len(consumer) != len(want) {
		t.Errorf("%d consumer spans, want %d (one per delivery): %v", len(consumer), len(want), consumer)
	}
	for k, w := range want {
		s, ok := consumer[k]
		if !ok {
			t.Errorf("no span for message %s epoch %d", k.id, k.epoch)
			continue
		}
		a := attrs(s)
		for name, value := range map[string]interface{}{
			"messaging.system": "msgq", "messaging.operation": "process",
			"messaging.operation.type": "process", "messaging.operation.name": "process",
			"messaging.destination.name": "traced", "messaging.msgq.keyspace": db,
			"server.address": srv.addr, "messaging.msgq.outcome": w.outcome,
		} {
			if a[name] != value {
				t.Errorf("%+v: %s = %v, want %v", k, name, a[name], value)
			}
		}
		if s.SpanKind() != trace.SpanKindConsumer || s.InstrumentationLibrary().Name != "msgq" {
			t.Errorf("%+v: kind %v, library %q", k, s.SpanKind(), s.InstrumentationLibrary().Name)
		}
		if w.outcome == "ack" {
			if s.Status().Code == codes.Error {
				t.Errorf("%+v: status %+v", k, s.Status())
			}
		} else if s.Status().Code != codes.Error || s.Status().Description != w.description {
			t.Errorf("%+v: status %+v, want Error %q", k, s.Status(), w.description)
		}
		if n := len(s.Events()); n != w.errors {
			t.Errorf("%+v: %d events (recorded errors), want %d", k, n, w.errors)
		}
		parent := s.Parent()
		if !w.traced {
			if parent.IsValid() || len(s.Links()) != 0 || s.SpanContext().TraceID() == psc.TraceID() {
				t.Errorf("%+v: untraced message has parent %v links %v", k, parent, s.Links())
			}
			continue
		}
		// The producer's span is the parent, as written in the row.
		if !parent.IsRemote() || parent.TraceID() != psc.TraceID() || parent.SpanID() != psc.SpanID() ||
			parent.TraceFlags() != psc.TraceFlags() || s.SpanContext().TraceID() != psc.TraceID() {
			t.Errorf("%+v: parent %v, want the producer's %v", k, parent, psc)
		}
		if k.id == "1" && parent.TraceState().String() != "msgq=test,other=1" {
			t.Errorf("%+v: parent tracestate %q", k, parent.TraceState().String())
		}
		if len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != psc.SpanID() ||
			s.Links()[0].SpanContext.TraceID() != psc.TraceID() {
			t.Errorf("%+v: links %+v", k, s.Links())
		}
	}
	if child == nil {
		t.Fatal("the handler's span was not recorded")
	}
	if c := consumer[key{"1", 1}]; c != nil && child.Parent().SpanID() != c.SpanContext().SpanID() {
		t.Errorf("handler span's parent %v, want the consumer span %v", child.Parent(), c.SpanContext())
	}

	// NoTracing: no spans at all.
	before := len(rec.Ended())
	sqlExec(t, "INSERT INTO "+db+".traced (id, message, traceparent) VALUES (5, '{}', '"+tp+"')")
	got := make(chan string, 1)
	quiet, err := subscribe([]string{srv.addr}, table, func(ctx context.Context, m *Message) Result {
		if trace.SpanFromContext(ctx).IsRecording() {
			t.Error("NoTracing handler runs in a recording span")
		}
		got <- m.ID()
		return Ack()
	}, Options{NoTracing: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != "5" {
			t.Errorf("got message %s", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("message 5 not delivered")
	}
	closeSub(t, quiet)
	if n := len(rec.Ended()); n != before {
		t.Errorf("NoTracing: %d new spans", n-before)
	}
}
