"""Tests of the msgq package's trace convention
(docs/api.md#trace-context-from-producer-to-consumer): the parsed
`traceparent`/`tracestate` columns on each Message, the producer helpers
msgq.traceparent()/tracestate(), and one OpenTelemetry CONSUMER span per
handled message, against in-process fake Messaging servers.

OpenTelemetry for Python is not installed here (no PyPI access, and Debian
has no python3-opentelemetry), so the span tests install a FAKE
`opentelemetry` package into sys.modules (make_fake_opentelemetry below).
It is not the real opentelemetry-api: it only imitates the part of the
opentelemetry-api 1.x surface that msgq.trace uses (opentelemetry.trace:
get_tracer_provider, set_tracer_provider, get_current_span,
set_span_in_context, use_span, SpanKind, SpanContext, TraceFlags,
TraceState.from_header/to_header, NonRecordingSpan, Link, Status,
StatusCode; opentelemetry.context: Context, get_current, attach, detach),
with the same names and signatures, plus a TracerProvider that records the
spans it starts. What these tests show is that msgq calls that surface as
intended (parent, link, kind, name, attributes, status, current span while
the handler runs, one span per delivery); that the real package behaves as
the fake does is not tested here. The tests without OpenTelemetry hide any
installed one (sys.modules["opentelemetry"] = None).

Run by ctest (msgq_python_trace_test), or by hand:
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 \\
      -m unittest -v msgq_trace_test
"""

import contextlib
import contextvars
import enum
import io
import itertools
import sys
import types
import unittest
from contextlib import redirect_stderr
from unittest import mock

import msgq
import msgq.trace
from msgq_consume_test import deliveries, fields, rows
from msgq_package_test import start_fake

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = "00-%s-%s-01" % (TRACE_ID, SPAN_ID)


def make_fake_opentelemetry():
    """A FAKE of the opentelemetry-api 1.x surface msgq.trace uses (see the
    module docstring): returns (modules for sys.modules, recording
    TracerProvider). Spans it starts are kept in provider.spans."""
    otel = types.ModuleType("opentelemetry")
    context_mod = types.ModuleType("opentelemetry.context")
    trace_mod = types.ModuleType("opentelemetry.trace")
    otel.context, otel.trace = context_mod, trace_mod

    # --- opentelemetry.context
    class Context(dict):
        """An immutable-by-convention mapping, as the real Context."""

    current = contextvars.ContextVar("fake_otel_context", default=Context())

    def get_current():
        return current.get()

    def attach(context):
        return current.set(context)

    def detach(token):
        current.reset(token)

    context_mod.Context = Context
    context_mod.get_current = get_current
    context_mod.attach = attach
    context_mod.detach = detach

    # --- opentelemetry.trace
    class SpanKind(enum.Enum):
        INTERNAL = 0
        SERVER = 1
        CLIENT = 2
        PRODUCER = 3
        CONSUMER = 4

    class TraceFlags(int):
        DEFAULT = 0x00
        SAMPLED = 0x01

        @property
        def sampled(self):
            return bool(self & TraceFlags.SAMPLED)

    class TraceState:
        def __init__(self, entries=()):
            self.entries = tuple(entries)

        @classmethod
        def from_header(cls, header_list):
            entries = []
            for header in header_list:
                for member in header.split(","):
                    member = member.strip()
                    if member:
                        key, _, value = member.partition("=")
                        entries.append((key.strip(), value.strip()))
            return cls(entries)

        def to_header(self):
            return ",".join("%s=%s" % kv for kv in self.entries)

        def __len__(self):
            return len(self.entries)

    class SpanContext:
        def __init__(self, trace_id, span_id, is_remote,
                     trace_flags=None, trace_state=None):
            self.trace_id, self.span_id = trace_id, span_id
            self.is_remote = is_remote
            self.trace_flags = TraceFlags(trace_flags or 0)
            self.trace_state = trace_state if trace_state is not None \
                else TraceState()

        @property
        def is_valid(self):
            return self.trace_id != 0 and self.span_id != 0

        def key(self):
            return (self.trace_id, self.span_id, int(self.trace_flags))

    class Link:
        def __init__(self, context, attributes=None):
            self.context, self.attributes = context, attributes

    class StatusCode(enum.Enum):
        UNSET = 0
        OK = 1
        ERROR = 2

    class Status:
        def __init__(self, status_code=StatusCode.UNSET, description=None):
            self.status_code, self.description = status_code, description

    class NonRecordingSpan:
        def __init__(self, context):
            self._context = context

        def get_span_context(self):
            return self._context

        def is_recording(self):
            return False

    invalid_span = NonRecordingSpan(SpanContext(0, 0, False))
    span_key = "fake-otel-current-span"

    def set_span_in_context(span, context=None):
        new = Context(context if context is not None else get_current())
        new[span_key] = span
        return new

    def get_current_span(context=None):
        c = context if context is not None else get_current()
        return c.get(span_key, invalid_span)

    @contextlib.contextmanager
    def use_span(span, end_on_exit=False, record_exception=True,
                 set_status_on_exception=True):
        token = attach(set_span_in_context(span))
        try:
            yield span
        finally:
            detach(token)
            if end_on_exit:
                span.end()

    ids = itertools.count(0x1000)

    class RecordingSpan:
        def __init__(self, tracer, name, parent, kind, attributes, links):
            self.tracer, self.name, self.kind = tracer, name, kind
            self.parent = parent if parent.is_valid else None
            self.attributes = dict(attributes or {})
            self.links = list(links or [])
            self.status = Status()
            self.exceptions = []
            self.ended = 0
            trace_id = parent.trace_id if parent.is_valid else next(ids)
            self._context = SpanContext(
                trace_id, next(ids), False,
                parent.trace_flags if parent.is_valid else TraceFlags(1),
                parent.trace_state if parent.is_valid else None)

        def get_span_context(self):
            return self._context

        def is_recording(self):
            return self.ended == 0

        def set_attribute(self, key, value):
            self.attributes[key] = value

        def record_exception(self, exception, attributes=None,
                             timestamp=None, escaped=False):
            self.exceptions.append(exception)

        def set_status(self, status, description=None):
            self.status = status

        def end(self, end_time=None):
            self.ended += 1

    class Tracer:
        def __init__(self, provider, name, version):
            self.provider, self.name, self.version = provider, name, version

        def start_span(self, name, context=None, kind=SpanKind.INTERNAL,
                       attributes=None, links=None, start_time=None,
                       record_exception=True, set_status_on_exception=True):
            parent = get_current_span(context).get_span_context()
            span = RecordingSpan(self, name, parent, kind, attributes, links)
            self.provider.spans.append(span)
            return span

    class TracerProvider:
        def __init__(self):
            self.spans = []
            self.tracers = []

        def get_tracer(self, instrumenting_module_name,
                       instrumenting_library_version=None, schema_url=None,
                       attributes=None):
            tracer = Tracer(self, instrumenting_module_name,
                            instrumenting_library_version)
            self.tracers.append(tracer)
            return tracer

    provider = TracerProvider()
    global_provider = [provider]

    def get_tracer_provider():
        return global_provider[0]

    def set_tracer_provider(p):
        global_provider[0] = p

    def get_tracer(name, version=None, tracer_provider=None):
        return (tracer_provider or get_tracer_provider()).get_tracer(
            name, version)

    for name, value in dict(
            SpanKind=SpanKind, TraceFlags=TraceFlags, TraceState=TraceState,
            SpanContext=SpanContext, Link=Link, Status=Status,
            StatusCode=StatusCode, NonRecordingSpan=NonRecordingSpan,
            INVALID_SPAN=invalid_span, set_span_in_context=set_span_in_context,
            get_current_span=get_current_span, use_span=use_span,
            get_tracer_provider=get_tracer_provider,
            set_tracer_provider=set_tracer_provider, get_tracer=get_tracer,
            TracerProvider=TracerProvider).items():
        setattr(trace_mod, name, value)
    modules = {"opentelemetry": otel, "opentelemetry.context": context_mod,
               "opentelemetry.trace": trace_mod}
    return modules, provider


class FakeOtelCase(unittest.TestCase):
    """Runs each test with the fake opentelemetry importable."""

    def setUp(self):
        modules, self.provider = make_fake_opentelemetry()
        patcher = mock.patch.dict(sys.modules, modules)
        patcher.start()
        self.addCleanup(patcher.stop)
        msgq.trace._reset_otel()
        self.addCleanup(msgq.trace._reset_otel)
        self.otel = modules["opentelemetry.trace"]
        self.fake, self.server, self.address = start_fake()
        self.addCleanup(self.server.stop, 0)

    def consumer_spans(self):
        return [s for s in self.provider.spans if s.name.startswith("process ")]


def traced_fields(*extra):
    return fields("id", "message", "traceparent", "tracestate", *extra)


class ParseTest(unittest.TestCase):
    def test_valid_values(self):
        tc = msgq.parse_traceparent(TRACEPARENT, "vendor=abc")
        self.assertEqual(tc, msgq.TraceContext(
            traceparent=TRACEPARENT, trace_id=TRACE_ID, span_id=SPAN_ID,
            flags=1, tracestate="vendor=abc", version=0))
        self.assertTrue(tc.sampled)
        # bytes (as columns come), surrounding blanks, upper case (as Node).
        tc = msgq.parse_traceparent(
            (" " + TRACEPARENT[:-2].upper() + "00\n").encode(), b"  ")
        self.assertEqual((tc.trace_id, tc.span_id, tc.flags, tc.tracestate),
                         (TRACE_ID, SPAN_ID, 0, None))
        self.assertFalse(tc.sampled)
        # A future version may add fields after the flags.
        tc = msgq.parse_traceparent("01-%s-%s-03-more" % (TRACE_ID, SPAN_ID))
        self.assertEqual((tc.version, tc.flags), (1, 3))

    def test_invalid_values_are_none_never_an_exception(self):
        bad = [
            None, "", 42, object(), b"\xff" * 55, TRACEPARENT[:-1],
            TRACEPARENT + "-x",                              # 00 + extra
            "ff-%s-%s-01" % (TRACE_ID, SPAN_ID),             # version ff
            "00-%s-%s-01" % ("0" * 32, SPAN_ID),             # zero trace id
            "00-%s-%s-01" % (TRACE_ID, "0" * 16),            # zero span id
            "00-%s-%s-0g" % (TRACE_ID, SPAN_ID),             # not hex
            "00_%s_%s_01" % (TRACE_ID, SPAN_ID),
            "01-%s-%s-01x" % (TRACE_ID, SPAN_ID),            # no "-" after
        ]
        for value in bad:
            self.assertIsNone(msgq.parse_traceparent(value, "a=b"), repr(value))

    def test_message_trace_context(self):
        f = list(traced_fields().fields)
        m = msgq.Message(f, [b"1", b"x", TRACEPARENT.encode(), b"k=v"], 2)
        self.assertEqual(m.trace_context.trace_id, TRACE_ID)
        self.assertEqual(m.trace_context.tracestate, "k=v")
        self.assertIsNone(msgq.Message(f, [b"1", b"x", None, b"k=v"])
                          .trace_context)
        self.assertIsNone(msgq.Message(f, [b"1", b"x", b"garbage", None])
                          .trace_context)
        plain = list(fields("id", "message").fields)
        self.assertIsNone(msgq.Message(plain, [b"1", b"x"]).trace_context)
        # traceparent without a tracestate column
        only = list(fields("id", "traceparent").fields)
        tc = msgq.Message(only, [b"1", TRACEPARENT.encode()]).trace_context
        self.assertEqual((tc.span_id, tc.tracestate), (SPAN_ID, None))


class WithoutOpenTelemetryTest(unittest.TestCase):
    def setUp(self):
        # None in sys.modules makes `import opentelemetry` raise ImportError.
        patcher = mock.patch.dict(sys.modules, {"opentelemetry": None,
                                                "opentelemetry.trace": None})
        patcher.start()
        self.addCleanup(patcher.stop)
        msgq.trace._reset_otel()
        self.addCleanup(msgq.trace._reset_otel)

    def test_helpers_return_none(self):
        self.assertIsNone(msgq.trace.load_otel())
        self.assertIsNone(msgq.traceparent())
        self.assertIsNone(msgq.tracestate())
        self.assertEqual(msgq.trace_columns(),
                         {"traceparent": None, "tracestate": None})

    def test_subscriber_works_unchanged(self):
        fake, server, address = start_fake()
        try:
            fake.scripts.put(([traced_fields(),
                               rows([b"1", b"a", TRACEPARENT.encode(), None],
                                    [b"2", b"b", b"junk", None])], None))
            seen = []

            def handler(m):
                seen.append(m.trace_context)
                return msgq.ack() if m.id == "1" else msgq.retry(1, "later")

            self.assertEqual(msgq.Subscriber(address, "orders", handler)
                             .run(count=2), 2)
            self.assertEqual(seen[0].span_id, SPAN_ID)
            self.assertIsNone(seen[1])
            self.assertEqual([list(a.ids) for a in fake.acks], [[b"1"]])
            self.assertEqual([(deliveries(n), n.delay.value, n.reason)
                              for n in fake.nacks], [([(b"2", 0)], 1, "later")])
        finally:
            server.stop(0)


class ConsumerSpanTest(FakeOtelCase):
    def test_one_span_per_delivery_parented_and_linked_to_the_producer(self):
        tp = TRACEPARENT.encode()
        self.fake.scripts.put(([
            traced_fields(),
            rows([b"1", b"ok", tp, b"vendor=abc,other=1"],
                 [b"2", b"later", tp, None],
                 [b"3", b"poison", tp, None],
                 [b"4", b"boom", tp, None],
                 [b"5", b"untraced", None, None],
                 [b"6", b"bad", b"00-nothex", None], epochs=[0, 0, 3, 0, 0, 0]),
            rows([b"2", b"later", tp, None], epochs=[1]),
        ], None))
        current = {}

        def handler(m):
            # The consumer span is current while the handler runs.
            current[(m.id, m.epoch)] = self.otel.get_current_span()
            body = m.get("message")
            if body == "later":
                return msgq.ack() if m.epoch else msgq.retry(2.5, "busy")
            if body == "poison":
                return msgq.dead("bad json")
            if body == "boom":
                raise RuntimeError("db down")
            return msgq.ack()

        err = io.StringIO()
        with redirect_stderr(err):
            n = msgq.Subscriber(self.address, "orders", handler,
                                keyspace="app").run(count=7)
        self.assertEqual(n, 7)
        spans = self.consumer_spans()
        self.assertEqual(len(spans), 7)  # one per delivery
        by = {(s.attributes["messaging.message.id"],
               s.attributes["messaging.msgq.epoch"]): s for s in spans}
        self.assertEqual(sorted(by), [("1", 0), ("2", 0), ("2", 1), ("3", 3),
                                      ("4", 0), ("5", 0), ("6", 0)])
        producer = (int(TRACE_ID, 16), int(SPAN_ID, 16), 1)
        for key, span in by.items():
            self.assertEqual(span.name, "process orders")
            self.assertEqual(span.kind, self.otel.SpanKind.CONSUMER)
            self.assertEqual(span.ended, 1, key)
            self.assertIs(current[key], span)
            self.assertEqual(span.tracer.name, "msgq")
            self.assertEqual(span.tracer.version, msgq.__version__)
            a = span.attributes
            self.assertEqual(
                {k: a[k] for k in (
                    "messaging.system", "messaging.operation",
                    "messaging.operation.type", "messaging.operation.name",
                    "messaging.destination.name", "messaging.msgq.keyspace",
                    "server.address")},
                {"messaging.system": "msgq", "messaging.operation": "process",
                 "messaging.operation.type": "process",
                 "messaging.operation.name": "process",
                 "messaging.destination.name": "orders",
                 "messaging.msgq.keyspace": "app",
                 "server.address": self.address})
            if key[0] in ("5", "6"):  # no (valid) traceparent: a new root
                self.assertIsNone(span.parent, key)
                self.assertEqual(span.links, [], key)
                continue
            self.assertEqual(span.parent.key(), producer, key)
            self.assertTrue(span.parent.is_remote)
            self.assertEqual([l.context.key() for l in span.links], [producer])
            self.assertEqual(span.get_span_context().trace_id, producer[0])
        # The producer's tracestate goes with its context.
        self.assertEqual(by[("1", 0)].parent.trace_state.to_header(),
                         "vendor=abc,other=1")

        outcome = {k: (s.attributes["messaging.msgq.outcome"],
                       s.status.status_code.name, s.status.description,
                       [repr(e) for e in s.exceptions]) for k, s in by.items()}
        self.assertEqual(outcome, {
            ("1", 0): ("ack", "UNSET", None, []),
            ("2", 0): ("retry", "ERROR", "busy", []),
            ("2", 1): ("ack", "UNSET", None, []),
            ("3", 3): ("dead", "ERROR", "bad json", []),
            ("4", 0): ("retry", "ERROR", "db down",
                       ["RuntimeError('db down')"]),
            ("5", 0): ("ack", "UNSET", None, []),
            ("6", 0): ("ack", "UNSET", None, []),
        })
        # The outcomes still reach the server as without tracing (the acks
        # in batches of one or more).
        self.assertEqual([i for a in self.fake.acks for i in a.ids],
                         [b"1", b"5", b"6", b"2"])
        self.assertEqual([(deliveries(x), x.HasField("delay"), x.reason, x.dead)
                          for x in self.fake.nacks],
                         [([(b"2", 0)], True, "busy", False),
                          ([(b"3", 3)], False, "bad json", True),
                          ([(b"4", 0)], False, "db down", False)])
        self.assertIn("handler failed: RuntimeError('db down')", err.getvalue())

    def test_handler_spans_are_children_of_the_consumer_span(self):
        self.fake.scripts.put(([traced_fields(),
                                rows([b"7", b"x", TRACEPARENT.encode(), None])],
                               None))
        tracer = self.otel.get_tracer("app")

        def handler(m):
            tracer.start_span("charge card").end()
            return msgq.ack()

        msgq.Subscriber(self.address, "orders", handler).run(count=1)
        consumer, = self.consumer_spans()
        child, = [s for s in self.provider.spans if s.name == "charge card"]
        self.assertEqual(child.parent.span_id,
                         consumer.get_span_context().span_id)
        self.assertNotIn("messaging.msgq.keyspace", consumer.attributes)

    def test_a_bad_return_value_is_a_failed_span_and_a_retry(self):
        self.fake.scripts.put(([traced_fields(), rows([b"1", b"x", None, None])],
                               None))
        with redirect_stderr(io.StringIO()):
            msgq.Subscriber(self.address, "orders", lambda m: "yes").run(count=1)
        span, = self.consumer_spans()
        self.assertEqual(span.attributes["messaging.msgq.outcome"], "retry")
        self.assertEqual(span.status.status_code.name, "ERROR")
        self.assertIn("handler returned 'yes'", span.status.description)
        self.assertEqual(len(span.exceptions), 1)
        self.assertIn("handler returned 'yes'", self.fake.nacks[0].reason)

    def test_tracing_false_and_explicit_provider(self):
        self.fake.scripts.put(([traced_fields(),
                                rows([b"1", b"x", TRACEPARENT.encode(), None])],
                               None))
        msgq.Subscriber(self.address, "orders", lambda m: None,
                        tracing=False).run(count=1)
        self.assertEqual(self.provider.spans, [])
        other = self.otel.TracerProvider()
        self.fake.scripts.put(([traced_fields(),
                                rows([b"2", b"x", TRACEPARENT.encode(), None])],
                               None))
        msgq.Subscriber(self.address, "orders", lambda m: None,
                        tracer_provider=other).run(count=1)
        self.assertEqual(self.provider.spans, [])
        self.assertEqual([s.attributes["messaging.message.id"]
                          for s in other.spans], ["2"])

    def test_fan_in_spans_name_their_server(self):
        b, server_b, addr_b = start_fake()
        self.addCleanup(server_b.stop, 0)
        self.fake.scripts.put(([traced_fields(),
                                rows([b"1", b"a", TRACEPARENT.encode(), None])],
                               None))
        b.scripts.put(([traced_fields(), rows([b"1", b"b", None, None])], None))

        def handler(m):
            if m.server == addr_b:
                raise ValueError("nope")
            return msgq.ack()

        with redirect_stderr(io.StringIO()):
            n = msgq.Subscriber([self.address, addr_b], "orders",
                                handler).run(count=2)
        self.assertEqual(n, 2)
        spans = {s.attributes["server.address"]: s
                 for s in self.consumer_spans()}
        self.assertEqual(sorted(spans), sorted([self.address, addr_b]))
        self.assertEqual(spans[self.address].parent.span_id, int(SPAN_ID, 16))
        self.assertIsNone(spans[addr_b].parent)
        self.assertEqual(spans[addr_b].status.description, "nope")
        self.assertEqual(len(self.consumer_spans()), 2)
        self.assertEqual([deliveries(x) for x in b.nacks], [[(b"1", 0)]])


class ProducerToConsumerTest(FakeOtelCase):
    def test_producer_span_to_consumer_span(self):
        otel = self.otel
        tracer = otel.get_tracer("producer-app")
        upstream = otel.set_span_in_context(otel.NonRecordingSpan(
            otel.SpanContext(int(TRACE_ID, 16), 0xb7ad6b7169203331, True,
                             otel.TraceFlags(1),
                             otel.TraceState.from_header(["msgq=test"]))))
        producer = tracer.start_span("enqueue order", context=upstream,
                                     kind=otel.SpanKind.PRODUCER)
        self.assertIsNone(msgq.traceparent())  # no current span yet
        with otel.use_span(producer, end_on_exit=True):
            columns = msgq.trace_columns()
            tp, ts = msgq.traceparent(), msgq.tracestate()
        self.assertEqual(columns, {"traceparent": tp, "tracestate": ts})
        psc = producer.get_span_context()
        self.assertEqual(tp, "00-%032x-%016x-01" % (psc.trace_id, psc.span_id))
        self.assertEqual(ts, "msgq=test")
        # An explicit context, as with OpenTelemetry's own API.
        self.assertEqual(msgq.traceparent(upstream),
                         "00-%s-b7ad6b7169203331-01" % TRACE_ID)

        # The INSERT's values, as msgqd streams them.
        self.fake.scripts.put(([traced_fields(),
                                rows([b"1", b"{}", tp.encode(), ts.encode()])],
                               None))
        seen = []
        msgq.Subscriber(self.address, "orders",
                        lambda m: seen.append(m.trace_context)).run(count=1)
        self.assertEqual(seen[0].traceparent, tp)
        consumer, = self.consumer_spans()
        self.assertEqual(consumer.parent.key(), psc.key())
        self.assertEqual([l.context.key() for l in consumer.links], [psc.key()])
        self.assertEqual(consumer.parent.trace_state.to_header(), "msgq=test")


if __name__ == "__main__":
    unittest.main()
