package msgq

import (
	"encoding/hex"
	"fmt"
)

// TraceContext is a W3C Trace Context (https://www.w3.org/TR/trace-context/)
// as a producer wrote it into a message's `traceparent` (and `tracestate`)
// columns. A consumer starts its span as a child of (or linked to) it; this
// package has no OpenTelemetry dependency (it is not packaged in Debian), so
// it hands the context over as values: with OpenTelemetry, build a
// trace.SpanContext from TraceID, SpanID and Flags.
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
