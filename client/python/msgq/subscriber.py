"""Subscriber: a handler callback over one or several msgqd servers, with
handler concurrency, heartbeats, TLS and a bearer token (client/SPEC.md).

    sub = msgq.Subscriber(["db1:15999", "db2:15999"], "orders", handler,
                          concurrency=4,
                          tls=msgq.TLS.from_files(ca="ca.pem"),
                          token_file="/etc/msgq/token")
    sub.run()            # blocks; sub.stop() from any thread ends it

    with msgq.Subscriber("db1:15999", "orders", handler) as sub:
        sub.run()        # leaving the block stops sub and waits for run()

The handler returns msgq.ack() (None and True ack too), msgq.retry(delay,
reason) (False: retry()) or msgq.dead(reason) (see msgq.results); raising
an exception, or returning something else, retries the message with the
table's backoff. `concurrency` worker threads call it (default 1: one
message at a time, in the order received, whichever server it came from).
Each message is settled on the server it came from: acks are batched per
server (one MessageAck once `ack_batch` ids are pending or `ack_delay`
seconds after the oldest), a retry or dead goes out at once as one
MessageNack, before that worker takes its next message.

Heartbeats: while a handler runs, its delivery is extended (MessageExtend)
every `heartbeat_fraction` x the table's ack wait (learnt with ListTables
at each stream start unless `ack_wait` is given), each time by the ack
wait, never past the first deadline + `max_extension` seconds (a negative
`max_extension` turns heartbeats off); see msgq.heartbeat.

stop() (or leaving the `with` block) drains: the streams are cancelled and
no handler starts again; run() waits for the running handlers (up to
`drain_timeout` seconds; a handler still running then is left to finish on
its own and its message comes back after the ack wait), hands the messages
received that no handler started back (one MessageNack with delay 0 per
server: sent again at once), sends the pending acks, closes the channels
and returns. With `ack=False` (peek) nothing is settled, extended or
handed back.

Streams that end or drop reconnect with capped exponential backoff and
jitter (each try failing at once while the server is down, told to
`on_reconnect`); errors that are not worth a retry (NOT_FOUND,
UNAUTHENTICATED, PERMISSION_DENIED, ...), a malformed stream and a first
connection that fails (unless `retry_initial_connect`) end run(), which
drains and raises them as msgq.errors.ServerError subclasses
(UnknownTable, Unauthenticated, PermissionDenied, Unavailable, ...) or
msgq.errors.ProtocolError. With opentelemetry importable, each handler
call runs in a CONSUMER span parented on the producer's `traceparent`
column (msgq.trace).

The token goes as gRPC metadata `authorization: Bearer <token>` with every
call (per-call metadata, so it is sent on plaintext channels too; use TLS
wherever the network is not trusted).

Thread-safety: run() from one thread at a time; stop() and close() from
any thread, handlers included. The handler is called from `concurrency`
threads at once: with more than 1 it must be thread-safe.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from dataclasses import dataclass
from typing import (Any, Callable, Deque, Dict, List, Optional, Sequence,
                    Tuple, Union)

import grpc

from msgq.acks import AckBatcher
from msgq.backoff import Backoff
from msgq.consume import (CHANNEL_OPTIONS, LOG_PREFIX, RETRYABLE, Handler,
                          Metadata, handle)
from msgq.errors import ProtocolError, from_rpc
from msgq.fanin import OnServerReconnect
from msgq.heartbeat import Heartbeat
from msgq.message import Message, decode_row
from msgq.results import Ack, Outcome
from msgq.trace import ConsumerSpans
from msgq.v1 import messaging_pb2
from msgq.v1 import messaging_pb2_grpc

# The reason of a message handed back on stop.
HANDED_BACK = "consumer stopped before it"


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
    """Consumes one table from one or several servers into `handler` (see
    the module docstring).

    `servers`: "host:port", "a:1,b:2", or a list of addresses. `keyspace`:
    the database ("" = the server's default). `group`: a consumer group of
    the table to read (docs/design/consumer-groups.md), sent on the stream,
    the acks and the nacks ("" = the default group); a group's deliveries
    are not extended (MessageExtend names no group), so its heartbeats are
    off. `concurrency`: handler
    threads. `max_unacked`: the most messages one stream holds unsettled
    (0 = the server's default). `ack`: False peeks (nothing is settled).
    `tls`: TLS settings (None = plaintext). `token` or `token_file`: a
    bearer token (the file is read once, here). `ack_timeout`: deadline in
    seconds of each MessageAck, MessageNack, MessageExtend and ListTables.
    `ack_batch`, `ack_delay`: the ack batches' bounds.
    `heartbeat_fraction`, `max_extension`, `ack_wait`: the heartbeats.
    `drain_timeout`: how long a stop waits for running handlers.
    `on_reconnect(server, code, details, delay)`: called before each
    reconnect wait. `retry_initial_connect`: a first connection that fails
    is retried (and told to `on_reconnect`) instead of ending run().
    `tracing`: when opentelemetry is importable, a CONSUMER span per
    handled message (msgq.trace) from `tracer_provider` (default:
    OpenTelemetry's global one); False turns spans off.

    Counters, since the subscriber was made: `handled` (handler calls that
    returned or raised), `extended` (heartbeat extends the server applied),
    `lost` (heartbeats that found their delivery gone). Raises ValueError
    for a bad argument."""

    def __init__(self, servers: Union[str, Sequence[str]], table: str,
                 handler: Handler, *, keyspace: str = "",
                 group: str = "",
                 concurrency: int = 1, max_unacked: int = 0,
                 ack: bool = True, tls: Optional[TLS] = None,
                 token: Optional[str] = None,
                 token_file: Optional[str] = None, ack_timeout: float = 10.0,
                 ack_batch: int = 100, ack_delay: float = 0.05,
                 heartbeat_fraction: float = 0.5,
                 max_extension: float = 600.0,
                 ack_wait: Optional[float] = None,
                 drain_timeout: float = 30.0,
                 on_reconnect: Optional[OnServerReconnect] = None,
                 retry_initial_connect: bool = False,
                 channel_options: Sequence[Tuple[str, object]] =
                 CHANNEL_OPTIONS, tracing: bool = True,
                 tracer_provider: Any = None) -> None:
        if isinstance(servers, str):
            servers = servers.split(",")
        self.servers: List[str] = [s.strip() for s in servers if s.strip()]
        if not self.servers:
            raise ValueError("no server given")
        if not table:
            raise ValueError("empty table name")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if ack_batch < 1 or ack_delay < 0 or max_unacked < 0:
            raise ValueError("ack_batch >= 1, ack_delay >= 0, "
                             "max_unacked >= 0")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            token = read_token_file(token_file)
        self.table, self.handler, self.keyspace = table, handler, keyspace
        self.group = group
        self.concurrency, self.max_unacked = concurrency, max_unacked
        self.ack, self.tls, self.ack_timeout = ack, tls, ack_timeout
        self.ack_batch, self.ack_delay = ack_batch, ack_delay
        self.heartbeat_fraction = min(max(heartbeat_fraction, 0.05), 1.0)
        self.max_extension, self.ack_wait = max_extension, ack_wait
        self.drain_timeout, self.on_reconnect = drain_timeout, on_reconnect
        self.retry_initial_connect = retry_initial_connect
        self.tracing, self.tracer_provider = tracing, tracer_provider
        self.channel_options = list(channel_options)
        self._metadata: Metadata = bearer_metadata(token)
        self._lock = threading.Lock()
        self._stop = threading.Event()  # stop() was called
        self._session: Optional[_Session] = None  # the run() under way
        self._done = threading.Condition(self._lock)  # a run() returned
        self._handled = self._extended = self._lost = 0  # ended sessions

    @property
    def metadata(self) -> Metadata:
        """The metadata sent with every call (the authorization header)."""
        return self._metadata

    @property
    def handled(self) -> int:
        with self._lock:
            session = self._session
            n = self._handled
        return n + (session.handled if session is not None else 0)

    @property
    def extended(self) -> int:
        with self._lock:
            session = self._session
            n = self._extended
        return n + (session.extended() if session is not None else 0)

    @property
    def lost(self) -> int:
        with self._lock:
            session = self._session
            n = self._lost
        return n + (session.lost() if session is not None else 0)

    def run(self, count: int = 0) -> int:
        """Consumes until `count` messages were handled (0 = no limit), a
        fatal error, or stop(); then drains (see the module docstring) and
        returns the number of messages this call handled. Raises the fatal
        error (msgq.errors.ServerError subclasses, ProtocolError) after the
        drain. Returns 0 at once once stop() was called."""
        if count < 0:
            raise ValueError("count must be 0 or more")
        with self._lock:
            if self._session is not None:
                raise RuntimeError("run() is already under way")
            if self._stop.is_set():  # stop() came first
                return 0
            session = _Session(self, count)
            self._session = session
        try:
            return session.run()
        finally:
            with self._lock:
                self._handled += session.handled
                self._extended += session.extended()
                self._lost += session.lost()
                self._session = None
                self._done.notify_all()

    def stop(self) -> None:
        """Ends run(), which drains first. Safe from any thread, a handler
        included, and before run() (which then returns at once)."""
        with self._lock:
            self._stop.set()
            session = self._session
        if session is not None:
            session.stop()

    def close(self) -> None:
        """stop(), then waits for a run() under way in another thread to
        drain and return; called from a handler (or `on_reconnect`), only
        stops (run() waits for that handler)."""
        self.stop()
        with self._lock:
            session = self._session
            if session is None or session.owns_current_thread():
                return
            while self._session is session:
                self._done.wait()

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc: object) -> None:
        """close()."""
        self.close()


@dataclass
class _Received:
    """A streamed message and when it arrived (time.monotonic())."""

    message: Message
    received: float


class _LocalQueue:
    """Messages received and not yet given to a handler, all servers
    together. Bounded: put() waits while it is full, so a stream thread
    stops reading and gRPC flow control pushes back on its server. At most
    `limit` take()s succeed (0 = no limit). close() wakes every waiter;
    then put() refuses and take() hands out nothing, and drain() returns
    what is left. Thread-safe."""

    def __init__(self, capacity: int, limit: int = 0) -> None:
        self._cond = threading.Condition()
        self._items: Deque[_Received] = collections.deque()
        self._capacity, self._limit = capacity, limit
        self._taken = 0
        self._closed = False

    def put(self, item: _Received) -> bool:
        """Adds `item`, waiting for room; False once closed (not added)."""
        with self._cond:
            while not self._closed and len(self._items) >= self._capacity:
                self._cond.wait()
            if self._closed:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def take(self) -> Optional[_Received]:
        """The oldest item, waiting for one; None once closed."""
        with self._cond:
            while not self._closed and (
                    not self._items or
                    (self._limit and self._taken >= self._limit)):
                self._cond.wait()
            if self._closed:
                return None
            self._taken += 1
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def drain(self) -> List[_Received]:
        """What is left (after close())."""
        with self._cond:
            items = list(self._items)
            self._items.clear()
            return items


@dataclass
class _Server:
    """One server of a run: its channel, stream call, heartbeat and acks."""

    name: str
    channel: grpc.Channel
    stub: Any  # messaging_pb2_grpc.MessagingStub
    heartbeat: Heartbeat
    acks: AckBatcher
    call: Any = None  # the MessageStream under way, to cancel on stop


class _Session:
    """One run() of a Subscriber: its channels and threads (a stream thread
    per server, `concurrency` workers, a heartbeat and an ack thread per
    server)."""

    def __init__(self, sub: Subscriber, count: int) -> None:
        self.sub = sub
        self.count = count
        self.md = tuple(sub.metadata) or None
        spans = ConsumerSpans.create(sub.table, sub.keyspace, sub.tracing,
                                     sub.tracer_provider)
        self.call: Callable[[Message], Any] = (
            spans.wrap(sub.handler) if spans is not None else sub.handler)
        self.queue = _LocalQueue(2 * sub.concurrency, count)
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.handled = 0
        self.error: Optional[BaseException] = None
        # Received while stopping, never queued: handed back with the queue.
        self.left_over: List[_Received] = []
        self.abandoned = False  # handlers outlived the drain timeout
        self.servers: Dict[str, _Server] = {}
        self.streams: List[threading.Thread] = []
        self.workers: List[threading.Thread] = []

    def extended(self) -> int:
        return sum(s.heartbeat.extended for s in list(self.servers.values()))

    def lost(self) -> int:
        return sum(s.heartbeat.lost for s in list(self.servers.values()))

    def owns_current_thread(self) -> bool:
        current = threading.current_thread()
        return current in self.streams or current in self.workers

    def run(self) -> int:
        sub = self.sub
        try:
            for name in sub.servers:
                self._add_server(name)
            for server in self.servers.values():
                thread = threading.Thread(
                    target=self._stream_thread, args=(server,), daemon=True,
                    name="msgq-stream %s" % server.name)
                self.streams.append(thread)
            self.workers = [
                threading.Thread(target=self._work, daemon=True,
                                 name="msgq-worker %d" % i)
                for i in range(sub.concurrency)]
            for thread in self.streams + self.workers:
                thread.start()
            self.stopping.wait()
        finally:
            self._drain()
        if self.error is not None:
            raise self.error
        return self.handled

    def _add_server(self, name: str) -> None:
        sub = self.sub
        channel = make_channel(name, sub.tls, sub.channel_options)
        stub = messaging_pb2_grpc.MessagingStub(channel)

        def extend(delivery: Any, seconds: float) -> int:
            return int(stub.MessageExtend(
                messaging_pb2.MessageExtendRequest(
                    keyspace=sub.keyspace, name=sub.table,
                    deliveries=[delivery], duration=seconds),
                timeout=sub.ack_timeout, metadata=self.md).extended)

        def send_acks(ids: List[bytes]) -> None:
            stub.MessageAck(messaging_pb2.MessageAckRequest(
                keyspace=sub.keyspace, name=sub.table, ids=ids,
                group=sub.group),
                timeout=sub.ack_timeout, metadata=self.md)

        heartbeat = Heartbeat(
            extend, fraction=sub.heartbeat_fraction,
            max_extension=(sub.max_extension if sub.ack and not sub.group
                           else -1.0),
            ack_wait=sub.ack_wait,
            on_error=lambda e: _report("%s: extend failed: %s"
                                       % (name, _text(e))))
        acks = AckBatcher(send_acks, max_batch=sub.ack_batch,
                          max_delay=sub.ack_delay,
                          on_error=lambda e: _report("%s: ack failed: %s"
                                                     % (name, _text(e))))
        with self.lock:
            self.servers[name] = _Server(name, channel, stub, heartbeat,
                                         acks)
        heartbeat.start()
        acks.start()

    def stop(self) -> None:
        """Cancels the streams and ends the workers once their handler
        returns; what is queued stays there for the hand-back."""
        with self.lock:
            self.stopping.set()
            calls = [s.call for s in self.servers.values()
                     if s.call is not None]
        self.queue.close()
        for call in calls:
            call.cancel()

    def _fail(self, error: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = error
        self.stop()

    def _drain(self) -> None:
        self.stop()
        deadline = time.monotonic() + self.sub.drain_timeout
        for thread in self.streams + self.workers:
            if thread.ident is not None:  # started
                thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in self.workers):
            with self.lock:
                self.abandoned = True
            _report("handlers still running after the drain timeout of "
                    "%gs: their messages come back after the ack wait"
                    % self.sub.drain_timeout)
        self._hand_back()
        for server in self.servers.values():
            server.heartbeat.close()
        for server in self.servers.values():
            server.acks.close()
        for server in self.servers.values():
            server.channel.close()

    def _hand_back(self) -> None:
        with self.lock:
            unstarted = self.queue.drain() + self.left_over
            self.left_over = []
        if not self.sub.ack:
            return
        by_server: Dict[str, List[Any]] = {}
        for r in unstarted:
            by_server.setdefault(r.message.server, []).append(
                messaging_pb2.Delivery(id=r.message.raw_id,
                                       epoch=r.message.epoch))
        for name, deliveries in by_server.items():
            request = messaging_pb2.MessageNackRequest(
                keyspace=self.sub.keyspace, name=self.sub.table,
                deliveries=deliveries, reason=HANDED_BACK,
                group=self.sub.group)
            request.delay.value = 0.0
            self._nack(self.servers[name], request)

    # The streams.

    def _stream_thread(self, server: _Server) -> None:
        try:
            self._stream(server)
        except BaseException as e:  # on_reconnect raised, or a bug: fatal
            self._fail(e)

    def _stream(self, server: _Server) -> None:
        sub = self.sub
        request = messaging_pb2.MessageStreamRequest(
            keyspace=sub.keyspace, name=sub.table,
            max_unacked=sub.max_unacked, group=sub.group)
        backoff = Backoff()
        started_once = False
        while not self.stopping.is_set():
            call = server.stub.MessageStream(request, metadata=self.md,
                                             wait_for_ready=False)
            with self.lock:
                server.call = call
                stopping = self.stopping.is_set()
            if stopping:  # stop() came before the call was visible
                call.cancel()
                return
            fields: Optional[List[Any]] = None
            try:
                for response in call:
                    now = time.monotonic()  # its rows' receipt
                    if fields is None:
                        if not response.fields:
                            raise ProtocolError("first response has no "
                                                "fields")
                        fields = list(response.fields)
                        started_once = True
                        backoff.reset()
                        self._learn_ack_wait(server)
                    received = [
                        _Received(Message(fields, decode_row(fields, row),
                                          row.epoch, server.name), now)
                        for row in response.rows]
                    for i, item in enumerate(received):
                        if not self.queue.put(item):  # stopping
                            with self.lock:
                                self.left_over.extend(received[i:])
                            return
                if not started_once:
                    raise ProtocolError("stream ended before sending fields")
                code, details = grpc.StatusCode.UNAVAILABLE, "stream ended"
            except grpc.RpcError as e:
                if self.stopping.is_set():
                    return
                code = e.code() if isinstance(e.code(), grpc.StatusCode) \
                    else grpc.StatusCode.UNKNOWN
                if code not in RETRYABLE or not (
                        started_once or sub.retry_initial_connect):
                    self._fail(from_rpc(e))
                    return
                details = e.details() or ""
            except ProtocolError as e:
                self._fail(e)
                return
            finally:
                call.cancel()
            if self.stopping.is_set():
                return
            delay = backoff.next()
            if sub.on_reconnect is not None:
                sub.on_reconnect(server.name, code, details, delay)
            if self.stopping.wait(delay):
                return

    def _learn_ack_wait(self, server: _Server) -> None:
        """The table's ack wait from the server's ListTables, for the
        heartbeat (unless given, or the heartbeat is off)."""
        sub = self.sub
        if sub.ack_wait is not None or not server.heartbeat.enabled:
            return
        try:
            tables = server.stub.ListTables(
                messaging_pb2.ListTablesRequest(), timeout=sub.ack_timeout,
                metadata=self.md)
        except grpc.RpcError as e:
            _report("%s: ListTables for the ack wait failed, no heartbeats: "
                    "%s" % (server.name, from_rpc(e)))
            return
        for t in tables.tables:
            if t.name == sub.table and (not sub.keyspace
                                        or t.keyspace == sub.keyspace):
                server.heartbeat.set_ack_wait(t.settings.ack_wait)
                return
        _report("%s: ListTables does not list table %s: no heartbeats"
                % (server.name, sub.table))

    # Handlers and settling.

    def _work(self) -> None:
        try:
            while True:
                item = self.queue.take()
                if item is None:
                    return
                self._handle(item)
        except BaseException as e:  # not the handler's (handle() catches)
            self._fail(e)

    def _handle(self, item: _Received) -> None:
        message = item.message
        server = self.servers[message.server]
        ticket = server.heartbeat.begin(
            messaging_pb2.Delivery(id=message.raw_id, epoch=message.epoch),
            item.received)
        try:
            settled = handle(self.call, message)
        finally:
            server.heartbeat.end(ticket)
        with self.lock:
            self.handled += 1
            done = bool(self.count) and self.handled >= self.count
        self._settle(server, message, settled)
        if done:
            self.stop()

    def _settle(self, server: _Server, message: Message,
                settled: Outcome) -> None:
        if not self.sub.ack:
            return
        if isinstance(settled, Ack):
            server.acks.add(message.raw_id)  # refused once drained
            return
        delay, reason, is_dead = settled.key()
        request = messaging_pb2.MessageNackRequest(
            keyspace=self.sub.keyspace, name=self.sub.table,
            deliveries=[messaging_pb2.Delivery(id=message.raw_id,
                                               epoch=message.epoch)],
            reason=reason, dead=is_dead, group=self.sub.group)
        if delay is not None:
            request.delay.value = float(delay)
        self._nack(server, request)

    def _nack(self, server: _Server, request: Any) -> None:
        with self.lock:
            if self.abandoned:  # the channel is closed or closing
                return
        try:
            server.stub.MessageNack(request, timeout=self.sub.ack_timeout,
                                    metadata=self.md)
        except grpc.RpcError as e:
            # Not fatal: an unsettled delivery comes back after its ack wait.
            _report("%s: nack failed: %s" % (server.name, from_rpc(e)))


def _text(error: BaseException) -> str:
    return str(from_rpc(error)) if isinstance(error, grpc.RpcError) \
        else repr(error)


def _report(text: str) -> None:
    print("%s: %s" % (LOG_PREFIX, text), file=sys.stderr)
