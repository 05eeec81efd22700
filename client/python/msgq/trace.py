"""W3C Trace Context from producer to consumer.

Convention (the same in every msgq client): a message table may have a
`traceparent` column (varchar(55)) and optionally `tracestate` (e.g.
varchar(512)). The producer writes its current context there in the same
INSERT that enqueues the message:

    cur.execute("INSERT INTO orders (id, message, traceparent, tracestate)"
                " VALUES (%s, %s, %s, %s)",
                (order_id, body, msgq.traceparent(), msgq.tracestate()))

Each consumed Message exposes the parsed columns as `message.trace_context`
(a TraceContext, or None when the table has no traceparent column, the value
is NULL, or it is not valid W3C Trace Context). When `opentelemetry`
(opentelemetry-api 1.x) can be imported, the subscriber runs each handler
inside a CONSUMER span parented on (and linked to) that context (see
ConsumerSpans). Without opentelemetry, traceparent()/tracestate() return None
and nothing else changes: it is never required.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from msgq.results import (Ack, Dead, HandlerResult, Outcome, outcome,
                          thrown)

_TRACEPARENT = re.compile(
    r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?",
    re.DOTALL)
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


@dataclass(frozen=True)
class TraceContext:
    """A producer's W3C Trace Context, parsed from a message's `traceparent`
    (and `tracestate`) columns. `trace_id` (32 hex digits) and `span_id` (16,
    the producer's span) are lower-case hex; `flags` is the trace-flags byte
    (bit 0 = sampled); `tracestate` is the column's text (None when absent or
    empty)."""

    traceparent: str
    trace_id: str
    span_id: str
    flags: int
    tracestate: Optional[str] = None
    version: int = 0

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)


def _text(value: Any) -> Optional[str]:
    if isinstance(value, bytes):
        try:
            return value.decode("ascii")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def parse_traceparent(traceparent: Any,
                      tracestate: Any = None) -> Optional[TraceContext]:
    """The TraceContext of a traceparent value (str or bytes) and an optional
    tracestate, or None when it is missing or not valid W3C Trace Context
    (version ff, all-zero ids, extra fields after a version-00 value, not
    hex...). Never raises. As the Node client: surrounding whitespace is
    ignored and upper-case hex accepted (normalised to lower case)."""
    text = _text(traceparent)
    if text is None:
        return None
    value = text.strip().lower()
    m = _TRACEPARENT.fullmatch(value)
    if m is None:
        return None
    version, trace_id, span_id, flags, rest = m.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    state = _text(tracestate)
    state = state.strip() if state is not None else ""
    return TraceContext(traceparent=value, trace_id=trace_id, span_id=span_id,
                        flags=int(flags, 16), tracestate=state or None,
                        version=int(version, 16))


# --- OpenTelemetry (optional) ----------------------------------------------

_UNSET = object()
_otel: Any = _UNSET  # the opentelemetry.trace module, None when not importable


def load_otel() -> Any:
    """The `opentelemetry.trace` module, or None when opentelemetry cannot be
    imported (tried once per process)."""
    global _otel
    if _otel is _UNSET:
        try:
            from opentelemetry import trace as otel_trace
            _otel = otel_trace
        except Exception:  # ImportError, or a broken installation
            _otel = None
    return _otel


def _reset_otel() -> None:
    """Forget the result of load_otel() (tests that add or hide a fake
    opentelemetry)."""
    global _otel
    _otel = _UNSET


def _current_span_context(context: Any = None) -> Any:
    otel = load_otel()
    if otel is None:
        return None
    try:
        sc = otel.get_current_span(context).get_span_context()
        return sc if sc is not None and sc.is_valid else None
    except Exception:
        return None


def traceparent(context: Any = None) -> Optional[str]:
    """The traceparent of `context` (an OpenTelemetry Context; default: the
    current one) for the INSERT that enqueues a message: None when there is
    no valid span or opentelemetry is not installed."""
    sc = _current_span_context(context)
    if sc is None:
        return None
    return "00-%032x-%016x-%02x" % (sc.trace_id, sc.span_id,
                                    int(sc.trace_flags) & 0xff)


def tracestate(context: Any = None) -> Optional[str]:
    """The tracestate of `context` (default: the current one); None when
    empty, without a valid span, or without opentelemetry."""
    sc = _current_span_context(context)
    if sc is None or not sc.trace_state:
        return None
    try:
        header = sc.trace_state.to_header()
    except Exception:
        return None
    return header or None


def trace_columns(context: Any = None) -> Dict[str, Optional[str]]:
    """{"traceparent": ..., "tracestate": ...} of `context` (default: the
    current one), e.g. for an INSERT with named parameters."""
    return {"traceparent": traceparent(context),
            "tracestate": tracestate(context)}


class ConsumerSpans:
    """Runs handlers inside OpenTelemetry CONSUMER spans, one per delivery,
    with the convention of the Node client: name "process TABLE"; parent the
    producer's context from the message's traceparent/tracestate columns,
    and a link to it (without them, a new root span); attributes
    messaging.system "msgq", messaging.operation(.type/.name) "process",
    messaging.destination.name TABLE, messaging.message.id,
    messaging.msgq.epoch (sends before this one: the redelivery count),
    messaging.msgq.keyspace and server.address when known; at the end
    messaging.msgq.outcome ack|retry|dead and, for retry, dead or an
    exception, status ERROR with the reason (the exception recorded). The
    handler runs with the span current, so its own spans are its children.

    ConsumerSpans.create() returns None when tracing is off or opentelemetry
    is not importable; a failure inside OpenTelemetry never fails the
    message."""

    def __init__(self, otel: Any, tracer: Any, table: str,
                 keyspace: str = "") -> None:
        from opentelemetry import context as otel_context
        self.otel, self.otel_context, self.tracer = otel, otel_context, tracer
        self.table, self.keyspace = table, keyspace

    @classmethod
    def create(cls, table: str, keyspace: str = "", tracing: bool = True,
               tracer_provider: Any = None) -> Optional["ConsumerSpans"]:
        """ConsumerSpans for `table` from `tracer_provider` (default: the
        global one), or None without tracing or opentelemetry."""
        if not tracing:
            return None
        otel = load_otel()
        if otel is None:
            return None
        try:
            from msgq import __version__ as version
            provider = tracer_provider or otel.get_tracer_provider()
            return cls(otel, provider.get_tracer("msgq", version), table,
                       keyspace)
        except Exception as e:
            print("msgq: OpenTelemetry tracer unavailable: %r" % (e,),
                  file=sys.stderr)
            return None

    def _parent(self, tc: Optional[TraceContext]) -> Any:
        otel, root = self.otel, self.otel_context.Context()
        if tc is None:
            return root  # a new root span, as Node's ROOT_CONTEXT
        state = None
        if tc.tracestate:
            try:
                state = otel.TraceState.from_header([tc.tracestate])
            except Exception:
                state = None
        span_context = otel.SpanContext(
            trace_id=int(tc.trace_id, 16), span_id=int(tc.span_id, 16),
            is_remote=True, trace_flags=otel.TraceFlags(tc.flags),
            trace_state=state)
        return otel.set_span_in_context(otel.NonRecordingSpan(span_context),
                                        root)

    def start(self, message: Any) -> Any:
        """Starts the span of one delivery (not current yet)."""
        otel = self.otel
        tc = message.trace_context
        parent = self._parent(tc)
        attributes: Dict[str, Any] = {
            "messaging.system": "msgq",
            "messaging.operation": "process",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": self.table,
            "messaging.message.id": message.id,
            "messaging.msgq.epoch": int(message.epoch),
        }
        if self.keyspace:
            attributes["messaging.msgq.keyspace"] = self.keyspace
        if message.server:
            attributes["server.address"] = message.server
        links = []
        if tc is not None:
            links.append(otel.Link(
                otel.get_current_span(parent).get_span_context()))
        return self.tracer.start_span(
            "process " + self.table, context=parent,
            kind=otel.SpanKind.CONSUMER, attributes=attributes, links=links)

    def end(self, span: Any, settled: Outcome,
            error: Optional[BaseException]) -> None:
        """Ends `span` with the handler's outcome."""
        otel = self.otel
        kind = ("ack" if isinstance(settled, Ack) else
                "dead" if isinstance(settled, Dead) else "retry")
        span.set_attribute("messaging.msgq.outcome", kind)
        if error is not None:
            span.record_exception(error)
        if kind != "ack":
            reason = getattr(settled, "reason", "") or kind
            span.set_status(otel.Status(otel.StatusCode.ERROR, reason))
        span.end()

    def wrap(self, handler: Callable[[Any], HandlerResult]
             ) -> Callable[[Any], Outcome]:
        """`handler` run inside a span per message. The wrapper returns the
        outcome, or re-raises what the handler raised (or the TypeError of a
        result that is not one) after ending the span with a retry."""
        def traced(message: Any) -> Outcome:
            try:
                span = self.start(message)
            except Exception as e:
                print("msgq: OpenTelemetry span not started: %r" % (e,),
                      file=sys.stderr)
                return outcome(handler(message))
            try:
                with self.otel.use_span(span, end_on_exit=False,
                                        record_exception=False,
                                        set_status_on_exception=False):
                    settled = outcome(handler(message))
            except Exception as e:
                self._end_quietly(span, thrown(e), e)
                raise
            self._end_quietly(span, settled, None)
            return settled
        return traced

    def _end_quietly(self, span: Any, settled: Outcome,
                     error: Optional[BaseException]) -> None:
        try:
            self.end(span, settled, error)
        except Exception as e:
            print("msgq: OpenTelemetry span not ended: %r" % (e,),
                  file=sys.stderr)
