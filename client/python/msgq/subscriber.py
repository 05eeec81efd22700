"""Subscriber: a handler callback over one or several msgqd servers, with
TLS and a bearer token.

    sub = msgq.Subscriber(["db1:15999", "db2:15999"], "orders", handler,
                          tls=msgq.TLS.from_files(ca="ca.pem"),
                          token_file="/etc/msgq/token")
    sub.run()            # blocks; sub.stop() from another thread ends it

    with msgq.Subscriber("db1:15999", "orders", handler) as sub:
        sub.run()        # leaving the block stops sub and waits for run()

The handler returns msgq.ack() (None and True ack too), msgq.retry(delay,
reason) (False: retry()) or msgq.dead(reason) (see msgq.results); raising an exception retries the
message with the table's backoff. Each message is settled on the server
it came from. With opentelemetry importable, each handler call runs in a
CONSUMER span parented on the producer's `traceparent` column (msgq.trace). Streams that end or drop reconnect with capped exponential
backoff and jitter; errors that are not worth a retry (NOT_FOUND,
UNAUTHENTICATED, PERMISSION_DENIED, ...) and a first connection that fails
are raised from run() as msgq.errors.ServerError subclasses (UnknownTable,
Unauthenticated, PermissionDenied, Unavailable, ...).

The token goes as gRPC metadata `authorization: Bearer <token>` with every
call (per-call metadata, so it is sent on plaintext channels too; use TLS
wherever the network is not trusted).

Thread-safety: run() once, from one thread; stop() from any thread. With
several servers the handler is called under a lock, one message at a time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import grpc

from msgq.consume import (CHANNEL_OPTIONS, Handler, Metadata, OnReconnect,
                          consume)
from msgq.fanin import OnServerReconnect, consume_all


@dataclass(frozen=True)
class TLS:
    """TLS for the channels: PEM bytes. `root_certificates` None = the
    system's roots; `private_key` + `certificate_chain` = a client
    certificate (mTLS); `server_name` overrides the name checked in the
    server's certificate (e.g. when connecting by IP address)."""

    root_certificates: Optional[bytes] = None
    private_key: Optional[bytes] = None
    certificate_chain: Optional[bytes] = None
    server_name: Optional[str] = None

    @classmethod
    def from_files(cls, ca: Optional[str] = None, cert: Optional[str] = None,
                   key: Optional[str] = None,
                   server_name: Optional[str] = None) -> "TLS":
        """Reads the PEM files named (None = not given)."""
        def read(path: Optional[str]) -> Optional[bytes]:
            if path is None:
                return None
            with open(path, "rb") as f:
                return f.read()
        if (cert is None) != (key is None):
            raise ValueError("a client certificate needs both cert and key")
        return cls(read(ca), read(key), read(cert), server_name)


def bearer_metadata(token: Optional[str]) -> Tuple[Tuple[str, str], ...]:
    """The metadata carrying `token` (empty for None or "")."""
    if not token:
        return ()
    if any(c in token for c in "\r\n"):
        raise ValueError("a token must be one line")
    return (("authorization", "Bearer " + token),)


def read_token_file(path: str) -> str:
    """The token in `path`: its first line, without surrounding whitespace."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().strip().splitlines()
    if not lines or not lines[0].strip():
        raise ValueError("token file %s is empty" % path)
    return lines[0].strip()


def make_channel(target: str, tls: Optional[TLS] = None,
                 options: Sequence[Tuple[str, object]] = CHANNEL_OPTIONS
                 ) -> grpc.Channel:
    """A channel to `target` (host:port), TLS when `tls` is given."""
    opts = list(options)
    if tls is None:
        return grpc.insecure_channel(target, options=opts)
    if tls.server_name:
        opts.append(("grpc.ssl_target_name_override", tls.server_name))
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.root_certificates,
        private_key=tls.private_key,
        certificate_chain=tls.certificate_chain)
    return grpc.secure_channel(target, credentials, options=opts)


class Subscriber:
    """Consumes one table from one or several servers into `handler`.

    `servers`: "host:port", "a:1,b:2", or a list of addresses. `keyspace`:
    the database ("" = the server's default). `ack`: False peeks (nothing
    is settled). `tls`: TLS settings (None = plaintext). `token` or
    `token_file`: a bearer token (the file is read once, here).
    `ack_timeout`: deadline in seconds of each MessageAck/MessageNack.
    `on_reconnect(server, code, details, delay)`: called before each
    reconnect wait. `tracing`: when opentelemetry is importable, a CONSUMER
    span per handled message (msgq.trace) from `tracer_provider` (default:
    OpenTelemetry's global one); False turns spans off. `drain_timeout`:
    how long stop() lets run() finish the batch in hand, and how long
    leaving a `with` block waits for a run() in another thread.

    As a context manager, leaving the block calls stop() and waits for a
    run() under way in another thread to settle its batch and return."""

    def __init__(self, servers: Union[str, Sequence[str]], table: str,
                 handler: Handler, *, keyspace: str = "", ack: bool = True,
                 tls: Optional[TLS] = None, token: Optional[str] = None,
                 token_file: Optional[str] = None, ack_timeout: float = 10.0,
                 on_reconnect: Optional[OnServerReconnect] = None,
                 channel_options: Sequence[Tuple[str, object]] =
                 CHANNEL_OPTIONS, tracing: bool = True,
                 tracer_provider: Any = None,
                 drain_timeout: float = 30.0) -> None:
        if isinstance(servers, str):
            servers = servers.split(",")
        self.servers: List[str] = [s.strip() for s in servers if s.strip()]
        if not self.servers:
            raise ValueError("no server given")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            token = read_token_file(token_file)
        self.table, self.handler, self.keyspace = table, handler, keyspace
        self.ack, self.tls, self.ack_timeout = ack, tls, ack_timeout
        self.on_reconnect = on_reconnect
        self.tracing, self.tracer_provider = tracing, tracer_provider
        self.drain_timeout = drain_timeout
        self.channel_options = list(channel_options)
        self._metadata: Metadata = bearer_metadata(token)
        self._stop = threading.Event()  # stop() was called
        self._wake = threading.Event()  # stop() or the single consume ended
        self._running = threading.Event()  # run() is under way
        self._done = threading.Event()  # run() returned

    @property
    def metadata(self) -> Metadata:
        """The metadata sent with every call (the authorization header)."""
        return self._metadata

    def run(self, count: int = 0) -> int:
        """Consumes until `count` messages were handled (0 = no limit) or
        stop() is called; returns the number handled. Raises
        msgq.errors.ServerError subclasses (not worth a retry, or the first
        connection failed) and msgq.errors.ProtocolError; the channels are
        closed on return."""
        self._running.set()
        try:
            return self._run(count)
        finally:
            self._running.clear()
            self._done.set()

    def _run(self, count: int) -> int:
        if self._stop.is_set():  # stop() came first
            return 0
        channels = [(s, make_channel(s, self.tls, self.channel_options))
                    for s in self.servers]
        common = dict(keyspace=self.keyspace, ack=self.ack,
                      ack_timeout=self.ack_timeout, metadata=self._metadata,
                      tracing=self.tracing,
                      tracer_provider=self.tracer_provider)
        if len(channels) > 1:
            # consume_all closes the channels once stopped or done.
            return consume_all(channels, self.table, self.handler,
                               count=count, on_reconnect=self.on_reconnect,
                               stop=self._stop, **common)
        name, channel = channels[0]
        on_reconnect: Optional[OnReconnect] = None
        if self.on_reconnect:
            callback = self.on_reconnect

            def on_reconnect(c: grpc.StatusCode, d: str, t: float) -> None:
                callback(name, c, d, t)
        outcome: Dict[str, Any] = {}
        idle = threading.Event()

        def work() -> None:
            try:
                outcome["handled"] = consume(
                    channel, self.table, self.handler, count=count,
                    server=name, stop=self._stop, on_reconnect=on_reconnect,
                    idle=idle, **common)
            except BaseException as e:  # re-raised by run()
                outcome["error"] = e
            finally:
                self._wake.set()

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        try:
            self._wake.wait()
            # Stopped: a batch in hand is handled and settled first (for
            # up to drain_timeout); an idle stream sits until its channel
            # is closed.
            deadline = time.monotonic() + self.drain_timeout
            while (worker.is_alive() and not idle.is_set()
                   and time.monotonic() < deadline):
                worker.join(timeout=0.05)
        finally:
            channel.close()
        worker.join()
        if "error" in outcome:
            raise outcome["error"]
        return int(outcome["handled"])

    def stop(self) -> None:
        """Ends run(): the current batch is settled, then idle streams are
        cancelled (their channels closed). Safe from any thread, and before
        run() (which then returns at once)."""
        self._stop.set()
        self._wake.set()

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc: object) -> None:
        """stop(), then waits up to `drain_timeout` seconds for a run() in
        another thread to settle its batch and return."""
        self.stop()
        if self._running.is_set():
            self._done.wait(self.drain_timeout)
