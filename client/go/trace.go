package msgq

import (
	"context"
	"encoding/hex"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The trace convention (the same in every msgq client,
// docs/api.md#trace-context-from-producer-to-consumer): a message table may
// have a `traceparent` column (W3C Trace Context, varchar(55)) and optionally
// `tracestate`. A producer writes its current context there in the INSERT that
// enqueues the message (TraceParentFromContext, TraceStateFromContext);
// Message.TraceContext parses it, and the Subscriber runs each handler in an
// OpenTelemetry CONSUMER span parented on (and linked to) it: see
// Options.TracerProvider.

// TraceContext is a W3C Trace Context (https://www.w3.org/TR/trace-context/)
// as a producer wrote it into a message's `traceparent` (and `tracestate`)
// columns. SpanContext converts it for OpenTelemetry.
type TraceContext struct {
	Version byte
	TraceID [16]byte
	SpanID  [8]byte // the producer's span (parent-id)
	Flags   byte    // trace-flags; bit 0 = sampled
	State   string  // the tracestate column, unparsed ("" when absent)
}

// Sampled reports the sampled flag.
func (t TraceContext) Sampled() bool { return t.Flags&1 == 1 }

// TraceIDString is the trace id as 32 lower-case hex digits.
func (t TraceContext) TraceIDString() string { return hex.EncodeToString(t.TraceID[:]) }

// SpanIDString is the parent span id as 16 lower-case hex digits.
func (t TraceContext) SpanIDString() string { return hex.EncodeToString(t.SpanID[:]) }

// TraceParent formats the context back as a traceparent header value.
func (t TraceContext) TraceParent() string {
	return fmt.Sprintf("%02x-%s-%s-%02x", t.Version, t.TraceIDString(), t.SpanIDString(), t.Flags)
}

// ParseTraceParent parses a traceparent value
// ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"). As the W3C spec
// says: lower-case hex only, version ff and all-zero ids are invalid, and a
// future version may append "-..." fields after the flags.
func ParseTraceParent(s string) (TraceContext, error) {
	var tc TraceContext
	bad := func(why string) (TraceContext, error) {
		return TraceContext{}, fmt.Errorf("invalid traceparent %q: %s", s, why)
	}
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return bad("not version-traceid-spanid-flags")
	}
	for i := 0; i < 55; i++ {
		c := s[i]
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return bad("not lower-case hex")
		}
	}
	var version [1]byte
	hex.Decode(version[:], []byte(s[0:2]))
	tc.Version = version[0]
	if tc.Version == 0xff {
		return bad("version ff")
	}
	if tc.Version == 0 && len(s) != 55 {
		return bad("trailing data for version 00")
	}
	if len(s) > 55 && s[55] != '-' {
		return bad("trailing data")
	}
	hex.Decode(tc.TraceID[:], []byte(s[3:35]))
	hex.Decode(tc.SpanID[:], []byte(s[36:52]))
	var flags [1]byte
	hex.Decode(flags[:], []byte(s[53:55]))
	tc.Flags = flags[0]
	if tc.TraceID == ([16]byte{}) {
		return bad("all-zero trace id")
	}
	if tc.SpanID == ([8]byte{}) {
		return bad("all-zero span id")
	}
	return tc, nil
}

// SpanContext is the producer's span as an OpenTelemetry remote span
// context, with the tracestate when it parses (else none).
func (t TraceContext) SpanContext() trace.SpanContext {
	config := trace.SpanContextConfig{
		TraceID: trace.TraceID(t.TraceID), SpanID: trace.SpanID(t.SpanID),
		TraceFlags: trace.TraceFlags(t.Flags), Remote: true,
	}
	if t.State != "" {
		if ts, err := trace.ParseTraceState(t.State); err == nil {
			config.TraceState = ts
		}
	}
	return trace.NewSpanContext(config)
}

// TraceParentFromContext is the traceparent of ctx's span for the INSERT
// that enqueues a message ("00-<trace id>-<span id>-<flags>"); "" when ctx
// has no valid span context (write NULL for it, e.g. with SQL's NULLIF).
func TraceParentFromContext(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%02x", sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
}

// TraceStateFromContext is the tracestate of ctx's span ("" when empty or
// without a valid span context).
func TraceStateFromContext(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceState().String()
}

// tracerName is the instrumentation name of the consumer spans.
const tracerName = "msgq"

// newTracer is the tracer of a Subscriber's consumer spans: nil with
// NoTracing; else from o.TracerProvider or OpenTelemetry's global provider
// (a no-op until the application sets one with otel.SetTracerProvider).
func newTracer(o Options) trace.Tracer {
	if o.NoTracing {
		return nil
	}
	provider := o.TracerProvider
	if provider == nil {
		provider = otel.GetTracerProvider()
	}
	return provider.Tracer(tracerName)
}

// startSpan starts the CONSUMER span of one delivery, as the Node and
// Python clients do: named "process TABLE", a child of the producer's
// context from the message's traceparent/tracestate columns and linked to
// it (without them, a new root span), with the messaging attributes. ctx
// (the handler's context) carries the span, so the handler's own spans are
// its children.
func (s *Subscriber) startSpan(ctx context.Context, m *Message) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attribute.String("messaging.system", "msgq"),
		attribute.String("messaging.operation", "process"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.operation.name", "process"),
		attribute.String("messaging.destination.name", s.table.Name),
		attribute.String("messaging.message.id", m.ID()),
		attribute.Int64("messaging.msgq.epoch", m.Epoch()),
	}
	if s.table.Keyspace != "" {
		attrs = append(attrs, attribute.String("messaging.msgq.keyspace", s.table.Keyspace))
	}
	if m.Server() != "" {
		attrs = append(attrs, attribute.String("server.address", m.Server()))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	// The handler's context has no span of its own; never parent on one.
	parent := trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	if tc, ok := m.TraceContext(); ok {
		sc := tc.SpanContext()
		parent = trace.ContextWithRemoteSpanContext(ctx, sc)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return s.tracer.Start(parent, "process "+s.table.Name, opts...)
}

// endSpan ends a consumer span with the handler's outcome: the attribute
// messaging.msgq.outcome (ack, retry, dead), and for retry and dead status
// Error with the reason; Fail's error or a panic is recorded as well.
func endSpan(span trace.Span, r Result, panicked error) {
	span.SetAttributes(attribute.String("messaging.msgq.outcome", r.kind.String()))
	if panicked != nil {
		span.RecordError(panicked)
	} else if r.err != nil {
		span.RecordError(r.err)
	}
	if r.kind != KindAck {
		reason := r.reason
		if reason == "" {
			reason = r.kind.String()
		}
		span.SetStatus(codes.Error, reason)
	}
	span.End()
}
