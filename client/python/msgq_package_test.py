"""Tests of the msgq package's Subscriber against in-process fake Messaging
servers: the bearer token as per-call metadata, TLS (certificates made with
openssl), fan-in settling each message on its own server, stop(), the
`with` block; the handler results and the error types.

Run by ctest (msgq_python_package_test), or by hand:
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 \
      -m unittest -v msgq_package_test
"""

import dataclasses
import os
import shutil
import subprocess
import tempfile
import threading
import unittest
from concurrent import futures

import grpc

import msgq
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
        self.assertEqual(
            [(m, md.get("authorization")) for m, md in self.fake.metadata],
            [("MessageStream", "Bearer s3cret-token"),
             ("MessageAck", "Bearer s3cret-token"),
             ("MessageNack", "Bearer s3cret-token")])
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
