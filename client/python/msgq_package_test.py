"""Tests of the msgq package's Subscriber against in-process fake Messaging
servers: the bearer token as per-call metadata, TLS (certificates made with
openssl), fan-in settling each message on its own server, handler
concurrency, heartbeats, stop() and the drain, the `with` block; the
handler results and the error types; the heartbeat schedule (a fake clock)
and the ack batches.

Run by ctest (msgq_python_package_test), or by hand:
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 \
      -m unittest -v msgq_package_test
"""

import asyncio
import dataclasses
import io
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
from concurrent import futures
from contextlib import redirect_stderr

import grpc

import msgq
import msgq.aio
from msgq.acks import AckBatcher
from msgq.heartbeat import Heartbeat
from msgq.v1 import messaging_pb2_grpc
from msgq_consume_test import FakeMessaging, deliveries, fields, rows


class RecordingMessaging(FakeMessaging):
    """FakeMessaging that records each call's metadata: (method, dict)."""

    def __init__(self):
        super().__init__()
        self.metadata = []
        self.streaming = threading.Event()

    def _record(self, method, context):
        self.metadata.append((method, dict(context.invocation_metadata())))

    def MessageStream(self, request, context):
        self._record("MessageStream", context)
        self.streaming.set()
        yield from super().MessageStream(request, context)

    def MessageAck(self, request, context):
        self._record("MessageAck", context)
        return super().MessageAck(request, context)

    def MessageNack(self, request, context):
        self._record("MessageNack", context)
        return super().MessageNack(request, context)


def start_fake(credentials=None):
    fake = RecordingMessaging()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    messaging_pb2_grpc.add_MessagingServicer_to_server(fake, server)
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    return fake, server, "127.0.0.1:%d" % port


def ack_first_retry_second(message):
    return msgq.ack() if message.id == "1" else msgq.retry(2.5, "busy")


class TokenTest(unittest.TestCase):
    def setUp(self):
        self.fake, self.server, self.address = start_fake()

    def tearDown(self):
        self.server.stop(0)

    def test_every_call_carries_the_bearer_token(self):
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"1", b"a"], [b"2", b"b"])], None))
        sub = msgq.Subscriber(self.address, "orders", ack_first_retry_second,
                              token="s3cret-token")
        self.assertEqual(sub.run(count=2), 2)
        # The nack goes out at once, the ack with its batch: in either order.
        self.assertEqual(
            sorted((m, md.get("authorization"))
                   for m, md in self.fake.metadata),
            [("MessageAck", "Bearer s3cret-token"),
             ("MessageNack", "Bearer s3cret-token"),
             ("MessageStream", "Bearer s3cret-token")])
        self.assertEqual([list(a.ids) for a in self.fake.acks], [[b"1"]])
        self.assertEqual(deliveries(self.fake.nacks[0]), [(b"2", 0)])
        self.assertEqual(self.fake.nacks[0].delay.value, 2.5)
        self.assertEqual(self.fake.nacks[0].reason, "busy")

    def test_token_file_is_read_and_trimmed(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write("  from-file \n")
            f.flush()
            sub = msgq.Subscriber(self.address, "orders", lambda m: None,
                                  token_file=f.name)
        self.assertEqual(sub.metadata, (("authorization", "Bearer from-file"),))

    def test_no_token_no_authorization_header(self):
        self.fake.scripts.put(([fields("id"), rows([b"1"])], None))
        msgq.Subscriber(self.address, "orders", lambda m: None).run(count=1)
        self.assertEqual([m for m, _ in self.fake.metadata],
                         ["MessageStream", "MessageAck"])
        for _, md in self.fake.metadata:
            self.assertNotIn("authorization", md)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            msgq.Subscriber("", "orders", lambda m: None)
        with self.assertRaises(ValueError):
            msgq.Subscriber(self.address, "t", lambda m: None, token="a\nb")
        with self.assertRaises(ValueError):
            msgq.Subscriber(self.address, "t", lambda m: None, token="a",
                            token_file="/nonexistent")

    def test_stop_ends_an_idle_run(self):
        self.fake.scripts.put(([fields("id")], None))  # no rows, held open
        sub = msgq.Subscriber(self.address, "orders", lambda m: None)
        result = {}
        t = threading.Thread(target=lambda: result.update(n=sub.run()))
        t.start()
        self.assertTrue(self.fake.streaming.wait(10))
        sub.stop()
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual(result, {"n": 0})

    def test_first_connection_failure_is_raised(self):
        self.server.stop(0)
        with self.assertRaises(msgq.errors.Unavailable) as e:
            msgq.Subscriber(self.address, "orders", lambda m: None).run()
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIsInstance(e.exception, msgq.MsgqError)

    def test_with_block_stops_and_waits_for_run(self):
        self.fake.scripts.put(([fields("id"), rows([b"1"])], None))
        result = {}
        with msgq.Subscriber(self.address, "orders", lambda m: None) as sub:
            t = threading.Thread(target=lambda: result.update(n=sub.run()))
            t.start()
            self.assertTrue(self.fake.streaming.wait(10))
            for _ in range(500):  # the ack of the first batch, 5 s at most
                if self.fake.acks:
                    break
                threading.Event().wait(0.01)
        # Leaving the block stopped sub and waited for run() to return.
        self.assertEqual(result, {"n": 1})
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual([list(a.ids) for a in self.fake.acks], [[b"1"]])


class ResultsTest(unittest.TestCase):
    def test_none_true_and_ack_call_ack_false_retries(self):
        self.assertEqual(msgq.outcome(None), msgq.ack())
        self.assertEqual(msgq.outcome(True), msgq.ack())
        self.assertEqual(msgq.outcome(msgq.ack()), msgq.Ack())
        self.assertEqual(msgq.outcome(False), msgq.Retry(None, ""))
        with self.assertRaises(TypeError):
            msgq.outcome("yes")

    def test_bare_ack_still_acks_with_a_deprecation_warning(self):
        with self.assertWarns(DeprecationWarning) as w:
            self.assertEqual(msgq.outcome(msgq.ack), msgq.ack())
        self.assertIn("msgq.ack()", str(w.warning))

    def test_results_are_frozen_dataclasses(self):
        r = msgq.retry(-3, "later")
        self.assertEqual(r, msgq.Retry(delay=0.0, reason="later"))
        self.assertEqual(repr(r), "Retry(delay=0.0, reason='later')")
        self.assertEqual(repr(msgq.dead("x")), "Dead(reason='x')")
        self.assertEqual(hash(msgq.dead("x")), hash(msgq.Dead("x")))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            r.delay = 1  # type: ignore[misc]
        with self.assertRaises(ValueError):
            msgq.retry(float("nan"))
        with self.assertRaises(TypeError):
            msgq.retry("soon")  # type: ignore[arg-type]

    def test_server_errors_map_to_the_package_types(self):
        cases = [(grpc.StatusCode.NOT_FOUND, msgq.errors.UnknownTable),
                 (grpc.StatusCode.UNAVAILABLE, msgq.errors.Unavailable),
                 (grpc.StatusCode.DEADLINE_EXCEEDED, msgq.errors.Unavailable),
                 (grpc.StatusCode.PERMISSION_DENIED,
                  msgq.errors.PermissionDenied),
                 (grpc.StatusCode.UNAUTHENTICATED,
                  msgq.errors.Unauthenticated),
                 (grpc.StatusCode.INVALID_ARGUMENT,
                  msgq.errors.InvalidArgument),
                 (grpc.StatusCode.INTERNAL, msgq.errors.ServerError)]
        for code, kind in cases:
            e = msgq.errors.from_rpc(msgq.errors.ServerError(code, "d"))
            self.assertIs(type(msgq.errors.from_rpc(_FakeRpcError(code))),
                          kind, code)
            self.assertEqual(e.code(), code)


class _FakeRpcError(grpc.RpcError):
    def __init__(self, code):
        self._code = code

    def code(self):
        return self._code

    def details(self):
        return "details"


def wait_until(condition, timeout=10.0):
    """Polls `condition` every 10 ms until it holds; False after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class SubscriberTest(unittest.TestCase):
    """Handler threads, heartbeats and the drain, on a fake server."""

    def setUp(self):
        self.fake, self.server, self.address = start_fake()
        self.addCleanup(self.server.stop, 0)

    def test_handlers_run_on_concurrency_threads(self):
        self.fake.scripts.put(([fields("id"), rows([b"1"], [b"2"])], None))
        both = threading.Barrier(2, timeout=10)  # broken with one thread

        def handler(m):
            both.wait()
            return msgq.ack()

        sub = msgq.Subscriber(self.address, "orders", handler, concurrency=2)
        self.assertEqual(sub.run(count=2), 2)
        self.assertEqual(sorted(i for a in self.fake.acks for i in a.ids),
                         [b"1", b"2"])
        self.assertEqual(self.fake.nacks, [])

    def test_count_hands_back_what_no_handler_started(self):
        self.fake.scripts.put(([fields("id"),
                                rows([b"1"], [b"2"], [b"3"],
                                     epochs=[0, 4, 0])], None))
        sub = msgq.Subscriber(self.address, "orders", lambda m: None)
        self.assertEqual(sub.run(count=1), 1)
        self.assertEqual([list(a.ids) for a in self.fake.acks], [[b"1"]])
        self.assertEqual(
            [(deliveries(n), n.HasField("delay"), n.delay.value, n.reason,
              n.dead) for n in self.fake.nacks],
            [([(b"2", 4), (b"3", 0)], True, 0.0,
              "consumer stopped before it", False)])
        self.assertEqual(sub.handled, 1)

    def test_peek_settles_and_hands_back_nothing(self):
        self.fake.scripts.put(([fields("id"), rows([b"1"], [b"2"])], None))
        sub = msgq.Subscriber(self.address, "orders", lambda m: None,
                              ack=False)
        self.assertEqual(sub.run(count=1), 1)
        self.assertEqual((self.fake.acks, self.fake.nacks, self.fake.extends),
                         ([], [], []))

    def test_a_running_handler_is_extended_by_the_ack_wait(self):
        self.fake.ack_wait = 0.2  # an extend every 0.1 s
        self.fake.scripts.put(([fields("id"), rows([b"1"], epochs=[3])],
                               None))

        def handler(m):
            self.assertTrue(wait_until(lambda: len(self.fake.extends) >= 2))
            return msgq.ack()

        sub = msgq.Subscriber(self.address, "orders", handler,
                              keyspace="app")
        self.assertEqual(sub.run(count=1), 1)
        for e in self.fake.extends[:2]:
            self.assertEqual((e.keyspace, e.name, deliveries(e), e.duration),
                             ("app", "orders", [(b"1", 3)], 0.2))
        self.assertGreaterEqual(sub.extended, 2)
        self.assertEqual(sub.lost, 0)
        self.assertEqual([list(a.ids) for a in self.fake.acks], [[b"1"]])

    def test_an_extend_that_moves_no_row_is_lost(self):
        self.fake.ack_wait = 0.2
        self.fake.extended = 0  # sent again or settled meanwhile
        self.fake.scripts.put(([fields("id"), rows([b"1"])], None))

        def handler(m):
            self.assertTrue(wait_until(lambda: sub.lost == 1))

        sub = msgq.Subscriber(self.address, "orders", handler)
        self.assertEqual(sub.run(count=1), 1)
        self.assertEqual((sub.lost, sub.extended, len(self.fake.extends)),
                         (1, 0, 1))

    def test_a_group_is_sent_on_the_stream_acks_and_nacks(self):
        # A group's deliveries are never extended: MessageExtend names no
        # group (the handler outlives several would-be heartbeats).
        self.fake.ack_wait = 0.05
        self.fake.scripts.put(([fields("id"), rows([b"1"], [b"2"])], None))

        def handler(m):
            time.sleep(0.2)
            return ack_first_retry_second(m)

        sub = msgq.Subscriber(self.address, "orders", handler,
                              group="billing")
        self.assertEqual(sub.run(count=2), 2)
        self.assertEqual([r.group for r in self.fake.stream_requests],
                         ["billing"])
        self.assertEqual([(a.group, list(a.ids)) for a in self.fake.acks],
                         [("billing", [b"1"])])
        self.assertEqual([(n.group, deliveries(n)) for n in self.fake.nacks],
                         [("billing", [(b"2", 0)])])
        self.assertEqual(self.fake.extends, [])

    def test_async_subscriber_sends_the_group(self):
        self.fake.ack_wait = 0.05
        self.fake.scripts.put(([fields("id"), rows([b"1"], [b"2"])], None))

        async def main():
            async def handler(m):
                await asyncio.sleep(0.2)
                return ack_first_retry_second(m)

            # Leaving the block flushes the acks; the nack goes at once.
            async with msgq.aio.AsyncSubscriber(
                    self.address, "orders", handler, group="billing",
                    tracing=False):
                for _ in range(1000):
                    if self.fake.nacks:
                        break
                    await asyncio.sleep(0.01)

        asyncio.run(asyncio.wait_for(main(), 20))
        self.assertEqual([r.group for r in self.fake.stream_requests],
                         ["billing"])
        self.assertEqual([(a.group, list(a.ids)) for a in self.fake.acks],
                         [("billing", [b"1"])])
        self.assertEqual([(n.group, deliveries(n)) for n in self.fake.nacks],
                         [("billing", [(b"2", 0)])])
        self.assertEqual(self.fake.extends, [])

    def test_heartbeats_off(self):
        self.fake.ack_wait = 0.05
        self.fake.scripts.put(([fields("id"), rows([b"1"])], None))
        sub = msgq.Subscriber(self.address, "orders",
                              lambda m: time.sleep(0.3), max_extension=-1)
        self.assertEqual(sub.run(count=1), 1)
        self.assertEqual(self.fake.extends, [])

    def test_a_handler_past_the_drain_timeout_is_left_running(self):
        self.fake.scripts.put(([fields("id"), rows([b"1"])], None))
        release = threading.Event()

        def handler(m):
            sub.stop()
            release.wait(20)
            return msgq.retry(1, "late")

        sub = msgq.Subscriber(self.address, "orders", handler,
                              drain_timeout=0.1)
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(sub.run(), 0)
        self.assertIn("handlers still running after the drain timeout of "
                      "0.1s", err.getvalue())
        workers = [t for t in threading.enumerate()
                   if t.name.startswith("msgq-worker")]
        self.assertEqual(len(workers), 1)
        release.set()
        workers[0].join(10)
        self.assertFalse(workers[0].is_alive())
        # Its outcome is not sent: the message comes back after its ack wait.
        self.assertEqual((self.fake.acks, self.fake.nacks), ([], []))

    def test_retry_initial_connect(self):
        self.server.stop(0)
        told = []

        def on_reconnect(server, code, details, delay):
            told.append((server, code))
            if len(told) == 2:
                sub.close()  # from a stream thread: stops, does not wait

        sub = msgq.Subscriber(self.address, "orders", lambda m: None,
                              retry_initial_connect=True,
                              on_reconnect=on_reconnect)
        self.assertEqual(sub.run(), 0)
        self.assertEqual(told, [(self.address, grpc.StatusCode.UNAVAILABLE)]
                         * 2)

    def test_bad_arguments(self):
        for kwargs in ({"concurrency": 0}, {"ack_batch": 0},
                       {"ack_delay": -1}, {"max_unacked": -1}):
            with self.assertRaises(ValueError, msg=kwargs):
                msgq.Subscriber(self.address, "orders", lambda m: None,
                                **kwargs)
        with self.assertRaises(ValueError):
            msgq.Subscriber(self.address, "", lambda m: None)


class HeartbeatTest(unittest.TestCase):
    """The schedule of msgq.heartbeat.Heartbeat on a fake clock: received at
    100 s, ack wait 10 s, max_extension 12 s."""

    def setUp(self):
        self.now = 100.0
        self.calls = []
        self.answer = 1  # rows extended, or an exception to raise
        self.errors = []
        self.beat = self.make(max_extension=12)

    def make(self, **kwargs):
        def extend(delivery, seconds):
            self.calls.append((delivery, seconds, self.now))
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer
        kwargs.setdefault("ack_wait", 10)
        return Heartbeat(extend, on_error=self.errors.append,
                         now=lambda: self.now, **kwargs)

    def at(self, t):
        self.now = t
        self.beat.tick()

    def test_extends_every_half_ack_wait_up_to_the_cap(self):
        self.beat.begin("d", 100.0)
        self.assertEqual(self.beat.next_due(), 105.0)
        self.at(104.9)
        self.assertEqual(self.calls, [])
        for t in (105, 110, 115, 120, 125, 130):
            self.at(t)
        # Each asks for min(W, R + W + max_extension - now): never past 122.
        self.assertEqual(self.calls, [("d", 10, 105), ("d", 10, 110),
                                      ("d", 7, 115), ("d", 2, 120)])
        self.assertIsNone(self.beat.next_due())
        self.assertEqual((self.beat.extended, self.beat.lost,
                          self.beat.errors), (4, 0, 0))

    def test_a_late_tick_extends_at_once_from_the_receipt(self):
        # Received at 100, the handler starts at 108 (queued meanwhile).
        self.now = 108
        self.beat.begin("d", 100.0)
        self.assertEqual(self.beat.next_due(), 105.0)
        self.at(108)
        self.assertEqual(self.calls, [("d", 10, 108)])
        self.assertEqual(self.beat.next_due(), 113.0)

    def test_lost_is_never_extended_again(self):
        self.answer = 0
        self.beat.begin("d", 100.0)
        self.at(105)
        self.at(110)
        self.assertEqual(self.calls, [("d", 10, 105)])
        self.assertEqual((self.beat.extended, self.beat.lost), (0, 1))
        self.assertIsNone(self.beat.next_due())

    def test_a_failed_extend_is_reported_and_tried_next_interval(self):
        down = RuntimeError("down")
        self.answer = down
        self.beat.begin("d", 100.0)
        self.at(105)
        self.assertEqual(self.errors, [down])
        self.assertEqual(self.beat.next_due(), 110.0)
        self.answer = 1
        self.at(110)
        self.assertEqual(self.calls, [("d", 10, 105), ("d", 10, 110)])
        self.assertEqual((self.beat.extended, self.beat.errors), (1, 1))

    def test_ended_and_unknown_ack_wait_are_not_extended(self):
        ticket = self.beat.begin("d", 100.0)
        self.beat.end(ticket)
        self.at(105)
        self.assertEqual(self.calls, [])
        self.beat = self.make(ack_wait=None)
        self.beat.begin("e", 100.0)
        self.at(105)
        self.assertEqual(self.calls, [])
        self.assertIsNone(self.beat.next_due())
        self.beat.set_ack_wait(4)
        self.assertEqual(self.beat.next_due(), 102.0)

    def test_fraction_clamped_and_off(self):
        self.beat = self.make(fraction=0.001)
        self.beat.begin("d", 100.0)
        self.assertEqual(self.beat.next_due(), 100.5)  # 0.05 x 10
        off = self.make(max_extension=-1)
        self.assertFalse(off.enabled)
        self.assertEqual(off.begin("d", 100.0), 0)
        self.assertIsNone(off.next_due())

    def test_its_thread_extends_when_due_and_closes(self):
        calls = []
        beat = Heartbeat(lambda d, s: calls.append((d, s)) or 1,
                         ack_wait=0.2)
        beat.start()
        beat.begin("d", time.monotonic())
        self.assertTrue(wait_until(lambda: len(calls) >= 2))
        beat.close()
        self.assertEqual(calls[:2], [("d", 0.2), ("d", 0.2)])


class AckBatcherTest(unittest.TestCase):
    def setUp(self):
        self.sent = []
        self.fail = []  # StatusCodes the next sends fail with, in order
        self.errors = []

    def send(self, ids):
        self.sent.append(list(ids))
        if self.fail:
            raise _FakeRpcError(self.fail.pop(0))

    def batcher(self, **kwargs):
        return AckBatcher(self.send, on_error=self.errors.append, **kwargs)

    def test_a_full_batch_goes_at_once_the_rest_on_close(self):
        acks = self.batcher(max_batch=2, max_delay=3600)
        acks.start()
        for i in (b"1", b"2", b"3"):
            self.assertTrue(acks.add(i))
        self.assertTrue(wait_until(lambda: self.sent))
        self.assertEqual(self.sent, [[b"1", b"2"]])
        acks.close()
        self.assertEqual(self.sent, [[b"1", b"2"], [b"3"]])
        self.assertFalse(acks.add(b"4"))
        self.assertEqual(self.errors, [])

    def test_the_oldest_id_waits_max_delay_at_most(self):
        acks = self.batcher(max_batch=100, max_delay=0.01)
        acks.start()
        acks.add(b"1")
        self.assertTrue(wait_until(lambda: self.sent))
        self.assertEqual(self.sent, [[b"1"]])
        acks.close()

    def test_retryable_failures_are_sent_again_three_attempts_in_all(self):
        unavailable = grpc.StatusCode.UNAVAILABLE
        acks = self.batcher()
        acks.add(b"1")
        self.fail = [unavailable, grpc.StatusCode.ABORTED]
        acks.close()  # not started: close() sends
        self.assertEqual(self.sent, [[b"1"]] * 3)
        self.assertEqual(self.errors, [])

        self.sent, acks = [], self.batcher()
        acks.add(b"2")
        self.fail = [unavailable] * 3
        acks.close()
        self.assertEqual(self.sent, [[b"2"]] * 3)
        self.assertEqual([(type(e), e.code()) for e in self.errors],
                         [(msgq.errors.Unavailable, unavailable)])

    def test_other_failures_drop_the_batch(self):
        acks = self.batcher()
        acks.add(b"1")
        self.fail = [grpc.StatusCode.INTERNAL]
        acks.close()
        self.assertEqual(self.sent, [[b"1"]])
        self.assertEqual([e.code() for e in self.errors],
                         [grpc.StatusCode.INTERNAL])


class FanInTest(unittest.TestCase):
    def test_each_message_is_settled_on_its_own_server(self):
        a, server_a, addr_a = start_fake()
        b, server_b, addr_b = start_fake()
        try:
            # The same id on both servers: two different messages.
            a.scripts.put(([fields("id", "message"), rows([b"1", b"a"])], None))
            b.scripts.put(([fields("id", "message"),
                            rows([b"1", b"b"], [b"2", b"b2"])], None))
            seen = []

            def handler(m):
                seen.append((m.server, m.id))
                return msgq.dead("no") if m.id == "2" else msgq.ack()

            n = msgq.Subscriber([addr_a, addr_b], "orders", handler,
                                token="t").run(count=3)
            self.assertEqual(n, 3)
            self.assertEqual(sorted(seen), sorted(
                [(addr_a, "1"), (addr_b, "1"), (addr_b, "2")]))
            self.assertEqual([list(x.ids) for x in a.acks], [[b"1"]])
            self.assertEqual([list(x.ids) for x in b.acks], [[b"1"]])
            self.assertEqual(a.nacks, [])
            self.assertEqual([(deliveries(x), x.dead) for x in b.nacks],
                             [([(b"2", 0)], True)])
            for fake in (a, b):
                for _, md in fake.metadata:
                    self.assertEqual(md.get("authorization"), "Bearer t")
        finally:
            server_a.stop(0)
            server_b.stop(0)


@unittest.skipUnless(shutil.which("openssl"), "needs openssl")
class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="msgq-py-tls-")
        cls.key, cls.cert = (os.path.join(cls.dir, n)
                             for n in ("key.pem", "cert.pem"))
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
             "-keyout", cls.key, "-out", cls.cert, "-days", "1",
             "-subj", "/CN=msgq-test", "-addext",
             "subjectAltName=DNS:msgq-test,IP:127.0.0.1"],
            check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def test_tls_channel_with_token(self):
        with open(self.key, "rb") as k, open(self.cert, "rb") as c:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        fake, server, address = start_fake(creds)
        try:
            fake.scripts.put(([fields("id"), rows([b"7"])], None))
            tls = msgq.TLS.from_files(ca=self.cert)
            n = msgq.Subscriber(address, "orders", lambda m: None, tls=tls,
                                token="over-tls").run(count=1)
            self.assertEqual(n, 1)
            self.assertEqual([list(x.ids) for x in fake.acks], [[b"7"]])
            self.assertEqual(fake.metadata[0][1].get("authorization"),
                             "Bearer over-tls")
            # A plaintext client gets nowhere with a TLS server.
            with self.assertRaises(grpc.RpcError) as e:
                msgq.Subscriber(address, "orders", lambda m: None).run()
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        finally:
            server.stop(0)

    def test_client_cert_needs_key(self):
        with self.assertRaises(ValueError):
            msgq.TLS.from_files(ca=self.cert, cert=self.cert)


if __name__ == "__main__":
    unittest.main()
