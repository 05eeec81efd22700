"""Tests of msgq.consume and the msgq-consume command (msgq.cli) against an
in-process fake Messaging server.

Run by ctest (msgq_consume_py_test), or by hand:
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 \
      -m unittest -v msgq_consume_test
"""

import io
import queue
import random
import subprocess
import sys
import threading
import unittest
from concurrent import futures
from contextlib import redirect_stderr, redirect_stdout

import grpc

import msgq
import msgq.cli
from msgq.v1 import messaging_pb2
from msgq.v1 import messaging_pb2_grpc


def fields(*names):
    return messaging_pb2.MessageStreamResponse(fields=[
        messaging_pb2.Field(name=n, type="bigint" if i == 0 else "text")
        for i, n in enumerate(names)])


def rows(*rows_values, epochs=()):
    response = messaging_pb2.MessageStreamResponse()
    for i, values in enumerate(rows_values):
        row = response.rows.add()
        if i < len(epochs):
            row.epoch = epochs[i]
        for v in values:
            row.lengths.append(-1 if v is None else len(v))
            if v is not None:
                row.values += v
    return response


class FakeMessaging(messaging_pb2_grpc.MessagingServicer):
    """Plays back scripts: (responses, end) with end a StatusCode, or None to
    hold the stream open until the client goes away."""

    def __init__(self):
        self.scripts = queue.Queue()
        self.acks = []
        self.nacks = []
        self.nack_error = None  # (StatusCode, details) to answer nacks with
        self.stream_requests = []
        # ListTables lists "orders" in keyspaces "" and "app" with this ack
        # wait (the subscribers' heartbeats ask for it).
        self.ack_wait = 30.0
        self.extends = []
        self.extended = None  # MessageExtend's count; None: all deliveries

    def MessageStream(self, request, context):
        self.stream_requests.append(request)
        responses, end = self.scripts.get(timeout=10)
        for r in responses:
            yield r
        if end is None:
            done = threading.Event()
            context.add_callback(done.set)
            done.wait(10)
            return
        context.abort(end[0], end[1])

    def MessageAck(self, request, context):
        self.acks.append(request)
        return messaging_pb2.MessageAckResponse(acked=len(request.ids))

    def ListTables(self, request, context):
        return messaging_pb2.ListTablesResponse(tables=[
            messaging_pb2.TableStatus(
                keyspace=keyspace, name="orders", loaded=True,
                settings=messaging_pb2.TableSettings(ack_wait=self.ack_wait))
            for keyspace in ("", "app")])

    def MessageExtend(self, request, context):
        self.extends.append(request)
        return messaging_pb2.MessageExtendResponse(
            extended=len(request.deliveries) if self.extended is None
            else self.extended)

    def MessageNack(self, request, context):
        self.nacks.append(request)
        if self.nack_error:
            context.abort(*self.nack_error)
        n = len(request.deliveries)
        return messaging_pb2.MessageNackResponse(
            retried=0 if request.dead else n, dead=n if request.dead else 0)


def deliveries(request):
    return [(d.id, d.epoch) for d in request.deliveries]


class DecodeTest(unittest.TestCase):
    def test_decodes_values_and_nulls(self):
        f = list(fields("id", "message", "note").fields)
        row = rows([b"42", b"hello", None]).rows[0]
        self.assertEqual(msgq.decode_row(f, row),
                         [b"42", b"hello", None])

    def test_empty_is_not_null(self):
        f = list(fields("id", "message").fields)
        self.assertEqual(msgq.decode_row(f, rows([b"1", b""]).rows[0]),
                         [b"1", b""])

    def test_rejects_malformed_rows(self):
        f = list(fields("id", "message").fields)
        bad = [
            messaging_pb2.Row(lengths=[1], values=b"1"),
            messaging_pb2.Row(lengths=[1, 5], values=b"1ab"),
            messaging_pb2.Row(lengths=[1, 1], values=b"1abc"),
            messaging_pb2.Row(lengths=[1, -2], values=b"1"),
            messaging_pb2.Row(lengths=[-1, 1], values=b"a"),
        ]
        for row in bad:
            with self.assertRaises(msgq.ProtocolError, msg=str(row)):
                msgq.decode_row(f, row)

    def test_json_matches_msgq_tail(self):
        f = [messaging_pb2.Field(name="id", type="bigint"),
             messaging_pb2.Field(name="price", type="decimal"),
             messaging_pb2.Field(name="message", type="text"),
             messaging_pb2.Field(name="note", type="text"),
             messaging_pb2.Field(name="raw", type="blob")]
        msg = msgq.Message(
            f, [b"7", b"1.50", "h\u00e9 \"x\"\n".encode(), None, b"\xff"])
        self.assertEqual(
            msg.to_json(),
            '{"id":7,"price":1.50,"message":"h\u00e9 \\"x\\"\\n",'
            '"note":null,"raw":"\u00ff"}')
        self.assertEqual(msg.id, "7")
        self.assertEqual(msg.raw_id, b"7")
        self.assertEqual(msg.get("price"), "1.50")
        self.assertEqual(msg.get("raw"), "\u00ff")
        self.assertEqual(msg.raw("raw"), b"\xff")
        self.assertIsNone(msg.get("note"))
        self.assertIsNone(msg.raw("note"))
        self.assertTrue(msg.has("note"))
        self.assertFalse(msg.has("nope"))
        self.assertEqual(msg.epoch, 0)
        self.assertEqual(msg.delivery, msgq.Delivery("7", 0))


class ResultTest(unittest.TestCase):
    def test_outcomes(self):
        o = msgq.outcome
        self.assertEqual(o(None), msgq.ack())
        self.assertEqual(o(True), msgq.ack())
        self.assertEqual(o(False), msgq.retry())
        self.assertEqual(o(msgq.retry(1.5, "x")).key(),
                         (1.5, "x", False))
        self.assertEqual(o(msgq.dead("y")).key(), (None, "y", True))
        # A negative delay means "now", as in the C++, Node and Go clients.
        self.assertEqual(msgq.retry(-1).key(), (0.0, "", False))
        with self.assertRaises(ValueError):
            msgq.retry(float("nan"))
        with self.assertRaises(ValueError):
            msgq.retry(float("inf"))
        with self.assertRaises(TypeError):
            msgq.retry("soon")
        with self.assertRaises(TypeError):
            o("ok")


class BackoffTest(unittest.TestCase):
    def test_capped_exponential_with_jitter(self):
        b = msgq.Backoff(rng=random.Random(1))
        nominal = 0.1
        for _ in range(20):
            d = b.next()
            self.assertGreaterEqual(d, nominal * 0.8 - 1e-9)
            self.assertLessEqual(d, min(5.0, nominal * 1.2) + 1e-9)
            nominal = min(5.0, nominal * 2)
        b.reset()
        self.assertLessEqual(b.next(), 0.12 + 1e-9)


class ConsumeTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeMessaging()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        messaging_pb2_grpc.add_MessagingServicer_to_server(self.fake,
                                                           self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.address = "127.0.0.1:%d" % port
        self.channel = grpc.insecure_channel(self.address)

    def tearDown(self):
        self.channel.close()
        self.server.stop(0)

    def test_acks_each_batch_in_one_call_and_reconnects(self):
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"1", b"a"], [b"2", b"b"])],
                               (grpc.StatusCode.UNAVAILABLE, "reloaded")))
        self.fake.scripts.put(([fields("id", "message"), rows([b"3", b"c"])],
                               None))
        seen, reconnects = [], []
        handled = msgq.consume(
            self.channel, "orders", lambda m: seen.append(m.get("message")),
            keyspace="ks", count=3,
            on_reconnect=lambda code, details, delay: reconnects.append(
                (code, details)),
            sleep=lambda s: None)
        self.assertEqual(handled, 3)
        self.assertEqual(seen, ["a", "b", "c"])
        self.assertEqual([list(a.ids) for a in self.fake.acks],
                         [[b"1", b"2"], [b"3"]])
        self.assertEqual(self.fake.acks[0].keyspace, "ks")
        self.assertEqual(self.fake.acks[0].name, "orders")
        self.assertEqual(reconnects,
                         [(grpc.StatusCode.UNAVAILABLE, "reloaded")])

    def test_failed_handler_is_not_acked(self):
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"1", b"a"], [b"2", b"b"])], None))
        msgq.consume(self.channel, "orders",
                             lambda m: m.id != "1", count=2)
        self.assertEqual([list(a.ids) for a in self.fake.acks], [[b"2"]])
        # False is a retry with the table's backoff.
        self.assertEqual(len(self.fake.nacks), 1)
        self.assertEqual(deliveries(self.fake.nacks[0]), [(b"1", 0)])
        self.assertFalse(self.fake.nacks[0].HasField("delay"))

    def test_results_become_grouped_nacks_with_epochs(self):
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"1", b"ok"], [b"2", b"later"],
                                     [b"3", b"poison"], [b"4", b"later"],
                                     [b"5", b"boom"], [b"6", b"false"],
                                     [b"7", b"soon"],
                                     epochs=[0, 1, 2, 3, 4, 5, 6])], None))

        def handler(m):
            body = m.get("message")
            if body == "later":
                return msgq.retry(delay=2.5, reason="busy")
            if body == "soon":
                return msgq.retry(0)
            if body == "poison":
                return msgq.dead("bad json")
            if body == "boom":
                raise RuntimeError("db down")
            if body == "false":
                return False
            return msgq.ack()

        err = io.StringIO()
        with redirect_stderr(err):
            handled = msgq.consume(self.channel, "orders", handler,
                                           keyspace="ks", count=7)
        self.assertEqual(handled, 7)
        self.assertEqual([list(a.ids) for a in self.fake.acks], [[b"1"]])
        nacks = self.fake.nacks
        self.assertEqual(len(nacks), 5)
        for n in nacks:
            self.assertEqual((n.keyspace, n.name), ("ks", "orders"))
        # One call per (delay, reason, dead), in order of first appearance.
        self.assertEqual(deliveries(nacks[0]), [(b"2", 1), (b"4", 3)])
        self.assertTrue(nacks[0].HasField("delay"))
        self.assertEqual(nacks[0].delay.value, 2.5)
        self.assertEqual(nacks[0].reason, "busy")
        self.assertFalse(nacks[0].dead)

        self.assertEqual(deliveries(nacks[1]), [(b"3", 2)])
        self.assertFalse(nacks[1].HasField("delay"))
        self.assertEqual(nacks[1].reason, "bad json")
        self.assertTrue(nacks[1].dead)

        self.assertEqual(deliveries(nacks[2]), [(b"5", 4)])
        self.assertFalse(nacks[2].HasField("delay"))  # the table's backoff
        self.assertEqual(nacks[2].reason, "db down")
        self.assertFalse(nacks[2].dead)

        self.assertEqual(deliveries(nacks[3]), [(b"6", 5)])
        self.assertFalse(nacks[3].HasField("delay"))
        self.assertEqual(nacks[3].reason, "")

        self.assertEqual(deliveries(nacks[4]), [(b"7", 6)])
        self.assertTrue(nacks[4].HasField("delay"))
        self.assertEqual(nacks[4].delay.value, 0.0)
        self.assertIn("handler failed: RuntimeError('db down')",
                      err.getvalue())

    def test_a_failed_nack_is_reported_and_consuming_goes_on(self):
        self.fake.nack_error = (grpc.StatusCode.UNIMPLEMENTED, "old server")
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"1", b"a"], [b"2", b"b"]),
                                rows([b"3", b"c"])], None))
        err = io.StringIO()
        with redirect_stderr(err):
            handled = msgq.consume(
                self.channel, "orders",
                lambda m: m.id != "1" or msgq.dead("x"), count=3)
        self.assertEqual(handled, 3)
        self.assertEqual(len(self.fake.nacks), 1)
        self.assertEqual([list(a.ids) for a in self.fake.acks],
                         [[b"2"], [b"3"]])
        self.assertEqual(err.getvalue(),
                         "msgq_consume: nack failed: UNIMPLEMENTED: "
                         "old server\n")

    def test_a_bad_handler_result_is_a_retry_with_the_backoff(self):
        # As a thrown error (and as the Node client): not a crash of the
        # consumer, a retry with the table's backoff saying what came back.
        self.fake.scripts.put(([fields("id", "message"), rows([b"1", b"a"])],
                               None))
        err = io.StringIO()
        with redirect_stderr(err):
            handled = msgq.consume(self.channel, "orders",
                                           lambda m: "yes", count=1)
        self.assertEqual(handled, 1)
        self.assertEqual(self.fake.acks, [])
        self.assertEqual(len(self.fake.nacks), 1)
        self.assertEqual(deliveries(self.fake.nacks[0]), [(b"1", 0)])
        self.assertFalse(self.fake.nacks[0].HasField("delay"))
        self.assertFalse(self.fake.nacks[0].dead)
        self.assertIn("handler returned 'yes'", self.fake.nacks[0].reason)
        self.assertIn("handler failed: TypeError", err.getvalue())

    def test_no_ack(self):
        self.fake.scripts.put(([fields("id", "message"), rows([b"1", b"a"])],
                               None))
        msgq.consume(self.channel, "orders", lambda m: False,
                             ack=False, count=1)
        self.assertEqual(self.fake.acks, [])
        self.assertEqual(self.fake.nacks, [])

    def test_not_found_is_raised(self):
        self.fake.scripts.put(([], (grpc.StatusCode.NOT_FOUND, "no table")))
        with self.assertRaises(msgq.errors.UnknownTable) as ctx:
            msgq.consume(self.channel, "nope", lambda m: True)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertEqual(ctx.exception.details(), "no table")
        self.assertIsInstance(ctx.exception, msgq.MsgqError)
        self.assertIsInstance(ctx.exception, grpc.RpcError)

    def test_main_prints_json_lines(self):
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"1", b"hi"], [b"2", None])], None))
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = msgq.cli.main(["--server", self.address, "--count",
                                  "2", "orders"])
        self.assertEqual(code, msgq.cli.EXIT_OK, err.getvalue())
        self.assertEqual(out.getvalue(),
                         '{"id":1,"message":"hi"}\n{"id":2,"message":null}\n')

    def test_main_exit_codes(self):
        self.fake.scripts.put(([], (grpc.StatusCode.NOT_FOUND, "no table")))
        err = io.StringIO()
        with redirect_stderr(err):
            code = msgq.cli.main(["--server", self.address, "nope"])
        self.assertEqual(code, msgq.cli.EXIT_NOT_FOUND)
        self.assertIn("NOT_FOUND: no table", err.getvalue())

        self.server.stop(0)
        with redirect_stderr(err):
            code = msgq.cli.main(["--server", self.address, "orders"])
        self.assertEqual(code, msgq.cli.EXIT_UNAVAILABLE)

    def test_python_m_msgq_is_the_command(self):
        self.fake.scripts.put(([fields("id", "message"),
                                rows([b"7", b"hi"])], None))
        run = subprocess.run(
            [sys.executable, "-m", "msgq", "--server", self.address,
             "--count", "1", "orders"],
            capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(run.returncode, msgq.cli.EXIT_OK, run.stderr)
        self.assertEqual(run.stdout, '{"id":7,"message":"hi"}\n')


if __name__ == "__main__":
    unittest.main()
