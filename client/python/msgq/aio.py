"""msgq on asyncio (grpc.aio): AsyncSubscriber and AsyncClient.

    async def handler(message: msgq.Message) -> msgq.HandlerResult:
        await process(message.get("message"))
        return msgq.ack()              # None acks too

    async with msgq.aio.AsyncSubscriber("db1:15999", "orders", handler,
                                        concurrency=8) as sub:
        await sub.run()                # until sub.stop() or a fatal error

    async with msgq.aio.AsyncSubscriber("db1:15999", "orders") as sub:
        async for message in sub:      # no handler: iterate, then settle
            await sub.settle(message, msgq.ack())

AsyncSubscriber streams one table from one or several servers (each message
is settled on the server it came from, `message.server`). With a handler,
`concurrency` tasks run it (a coroutine function, or a plain function that
must not block); its result, an exception (a retry with the table's
backoff) or a result that is none of msgq.results' is settled as in the
blocking Subscriber. Acks are batched per server: one MessageAck once
`ack_batch` ids are pending or `ack_delay` seconds after the first; a nack
goes out at once. Heartbeats: while a handler runs (or, when iterating,
until settle()), its delivery is extended every `heartbeat_fraction` x the
table's ack wait (learnt with ListTables unless `ack_wait` is given), each
time by the ack wait, for at most `max_extension` seconds past the first
deadline (a negative `max_extension` turns heartbeats off). Streams that end
or drop reconnect with capped jittered backoff; a first connection that
fails (unless `retry_initial_connect`) and errors not worth a retry end
run() (and the iteration) with a msgq.errors.ServerError.

Leaving the `async with` block (or close()) stops: no new messages,
running handlers finish (up to `drain_timeout` seconds), prefetched messages
no handler started are handed back (retry at once), acks are flushed, the
channels closed. Iterated messages that were not settled come back after
their ack wait. Not thread-safe: use it from its event loop.

AsyncClient has the methods of msgq.Client as coroutines.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from dataclasses import dataclass, field
from typing import (Any, Awaitable, Callable, Dict, Iterable, List, Optional,
                    Sequence, Set, Tuple, Union)

import grpc
import grpc.aio

from msgq.backoff import Backoff
from msgq.client import DeliveryArg, Requests, TableArg, token_metadata
from msgq.consume import CHANNEL_OPTIONS, LOG_PREFIX, RETRYABLE, Metadata
from msgq.errors import ClosedError, ProtocolError, ServerError, from_rpc
from msgq.fanin import OnServerReconnect
from msgq.message import Message, decode_row
from msgq.results import (Ack, HandlerResult, Outcome, Retry, outcome,
                          thrown)
from msgq.subscriber import TLS
from msgq.trace import ConsumerSpans
from msgq.types import (DeadMessage, Id, Nacked, TableStatus)
from msgq.v1 import messaging_pb2
from msgq.v1 import messaging_pb2_grpc

AsyncHandler = Callable[[Message], Union[HandlerResult,
                                         Awaitable[HandlerResult]]]

def make_aio_channel(target: str, tls: Optional[TLS] = None,
                     options: Sequence[Tuple[str, object]] = CHANNEL_OPTIONS
                     ) -> grpc.aio.Channel:
    """A grpc.aio channel to `target` (host:port), TLS when `tls` is given."""
    opts = list(options)
    if tls is None:
        return grpc.aio.insecure_channel(target, options=opts)
    if tls.server_name:
        opts.append(("grpc.ssl_target_name_override", tls.server_name))
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.root_certificates,
        private_key=tls.private_key, certificate_chain=tls.certificate_chain)
    return grpc.aio.secure_channel(target, credentials, options=opts)


class AsyncClient:
    """msgq.Client's calls on asyncio: `await client.ack(table, ids)`, ...
    (see msgq.client for each call, its arguments and errors)."""

    def __init__(self, server: str = "", *, keyspace: str = "",
                 tls: Optional[TLS] = None, token: Optional[str] = None,
                 token_file: Optional[str] = None, timeout: float = 10.0,
                 channel_options: Sequence[Tuple[str, object]] =
                 CHANNEL_OPTIONS,
                 channel: Optional[grpc.aio.Channel] = None) -> None:
        if channel is None and not server:
            raise ValueError("no server given")
        self._metadata = tuple(token_metadata(token, token_file)) or None
        self._requests = Requests(keyspace)
        self.timeout = timeout
        self._own_channel = channel is None
        self._channel = channel if channel is not None else make_aio_channel(
            server, tls, channel_options)
        self._stub = messaging_pb2_grpc.MessagingStub(self._channel)
        self._closed = False

    async def _call(self, method: str, request: object) -> Any:
        if self._closed:
            raise ClosedError("the AsyncClient is closed")
        try:
            return await getattr(self._stub, method)(
                request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc(e) from e

    async def ack(self, table: TableArg, ids: Iterable[Id], *,
                  group: str = "") -> int:
        r = await self._call("MessageAck",
                             self._requests.ack(table, ids, group))
        return int(r.acked)

    async def nack(self, table: TableArg, deliveries: Iterable[DeliveryArg],
                   *, delay: Optional[float] = None, reason: str = "",
                   dead: bool = False) -> Nacked:
        r = await self._call("MessageNack", self._requests.nack(
            table, deliveries, delay, reason, dead))
        return Nacked(r.retried, r.dead)

    async def extend(self, table: TableArg,
                     deliveries: Iterable[DeliveryArg],
                     duration: float) -> int:
        r = await self._call("MessageExtend", self._requests.extend(
            table, deliveries, duration))
        return int(r.extended)

    async def list_dead(self, table: TableArg, *, limit: int = 100,
                        after_id: Optional[Id] = None) -> List[DeadMessage]:
        r = await self._call("ListDead", self._requests.list_dead(
            table, limit, after_id))
        return [DeadMessage.from_wire(m) for m in r.messages]

    async def redrive(self, table: TableArg, ids: Iterable[Id]) -> int:
        r = await self._call("Redrive", self._requests.redrive(table, ids))
        return int(r.redriven)

    async def redrive_all(self, table: TableArg) -> int:
        r = await self._call("Redrive", self._requests.redrive(table, None))
        return int(r.redriven)

    async def pause(self, table: TableArg) -> None:
        await self._call("SetPaused", self._requests.set_paused(table, True))

    async def resume(self, table: TableArg) -> None:
        await self._call("SetPaused", self._requests.set_paused(table, False))

    async def list_tables(self) -> List[TableStatus]:
        r = await self._call("ListTables", messaging_pb2.ListTablesRequest())
        return [TableStatus.from_wire(t) for t in r.tables]

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._own_channel:
                await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


@dataclass
class _Running:
    """A delivery whose handler runs (or that was iterated, until
    settle()), for the heartbeat."""

    delivery: messaging_pb2.Delivery
    received: float
    last_try: float


@dataclass
class _Server:
    name: str
    channel: grpc.aio.Channel
    stub: messaging_pb2_grpc.MessagingStub
    ack_wait: Optional[float]
    pending_acks: List[bytes] = field(default_factory=list)
    acks_waiting: asyncio.Event = field(default_factory=asyncio.Event)
    # close() sets it: the flusher sends what is pending and returns.
    closing: bool = False
    running: Dict[Tuple[bytes, int], _Running] = field(default_factory=dict)


class AsyncSubscriber:
    """Consumes one table from one or several servers on asyncio (see the
    module docstring). `servers`: "host:port", "a:1,b:2" or a list.
    `handler`: None to iterate instead. `group`: a consumer group of the
    table (docs/design/consumer-groups.md), sent on the stream, the acks
    and the nacks ("" = the default group; a group's deliveries get no
    heartbeats: MessageExtend names no group). `max_unacked`: the most messages
    one stream holds unsettled (0 = the server's default). `ack`: False
    peeks (nothing is settled). Counters: `handled`, `extended` (successful
    heartbeat extends), `lost` (heartbeats that found the delivery gone).
    `on_reconnect(server, code, details, delay)`: called before each
    reconnect wait. `retry_initial_connect`: a first connection that fails
    is retried (each attempt failing at once and reported to
    `on_reconnect`) instead of ending run()."""

    def __init__(self, servers: Union[str, Sequence[str]], table: str,
                 handler: Optional[AsyncHandler] = None, *,
                 keyspace: str = "", group: str = "",
                 concurrency: int = 1,
                 max_unacked: int = 0, ack: bool = True,
                 tls: Optional[TLS] = None, token: Optional[str] = None,
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
        self.table, self.keyspace, self.handler = table, keyspace, handler
        self.group = group
        self.concurrency, self.max_unacked = concurrency, max_unacked
        self.ack, self.tls, self.ack_timeout = ack, tls, ack_timeout
        self.ack_batch, self.ack_delay = ack_batch, ack_delay
        self.heartbeat_fraction = min(max(heartbeat_fraction, 0.05), 1.0)
        self.max_extension, self.ack_wait = max_extension, ack_wait
        self.drain_timeout, self.on_reconnect = drain_timeout, on_reconnect
        self.retry_initial_connect = retry_initial_connect
        self.channel_options = list(channel_options)
        self._metadata: Metadata = token_metadata(token, token_file)
        self._md = tuple(self._metadata) or None
        self._spans = ConsumerSpans.create(table, keyspace, tracing,
                                           tracer_provider)
        self.handled = self.extended = self.lost = 0
        self._servers: Dict[str, _Server] = {}
        # Prefetched messages, bounded so that a slow handler slows the
        # streams down (gRPC flow control) instead of piling up here.
        self._inbox: Optional[asyncio.Queue[Message]] = None
        self._streams: List[asyncio.Task[None]] = []
        self._flushers: List[asyncio.Task[None]] = []
        self._heartbeats: List[asyncio.Task[None]] = []
        self._workers: List[asyncio.Task[None]] = []
        self._busy: Set[asyncio.Task[None]] = set()
        self._stopping: Optional[asyncio.Event] = None
        self._error: Optional[BaseException] = None
        self._started = self._closed = False

    async def __aenter__(self) -> "AsyncSubscriber":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connects and starts streaming (and, with a handler, handling)."""
        if self._closed:
            raise ClosedError("the AsyncSubscriber is closed")
        if self._started:
            return
        self._started = True
        self._stopping = asyncio.Event()
        self._inbox = asyncio.Queue(maxsize=2 * self.concurrency)
        for name in self.servers:
            channel = make_aio_channel(name, self.tls, self.channel_options)
            server = _Server(name, channel,
                             messaging_pb2_grpc.MessagingStub(channel),
                             self.ack_wait)
            self._servers[name] = server
            self._streams.append(asyncio.create_task(self._stream(server)))
            if self.ack:
                self._flushers.append(
                    asyncio.create_task(self._flush_acks(server)))
                if self.max_extension >= 0 and not self.group:
                    self._heartbeats.append(
                        asyncio.create_task(self._heartbeat(server)))
        if self.handler is not None:
            self._workers = [asyncio.create_task(self._work())
                             for _ in range(self.concurrency)]

    async def run(self) -> None:
        """start(), then waits until stop() or a fatal error, then drains
        as close() does. Raises the fatal error (a msgq.errors.ServerError
        or ProtocolError)."""
        if self.handler is None:
            raise ValueError("run() needs a handler; iterate otherwise")
        await self.start()
        assert self._stopping is not None
        await self._stopping.wait()
        await self.close()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Ends run() and the iteration; close() (or leaving the block)
        drains."""
        if self._stopping is not None:
            self._stopping.set()

    def __aiter__(self) -> "AsyncSubscriber":
        return self

    async def __anext__(self) -> Message:
        """The next message; settle it with settle(). Ends once stopped;
        raises the fatal error that stopped the streams."""
        if self.handler is not None:
            raise TypeError("a subscriber with a handler is not iterated")
        await self.start()
        assert self._inbox is not None and self._stopping is not None
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            while not self._stopping.is_set():
                get = asyncio.ensure_future(self._inbox.get())
                await asyncio.wait({get, stopping},
                                   return_when=asyncio.FIRST_COMPLETED)
                if get.done():
                    message = get.result()
                    self._begin(message)
                    return message
                get.cancel()
        finally:
            stopping.cancel()
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    async def settle(self, message: Message, result: HandlerResult) -> None:
        """Settles an iterated message: ack() (None, True), retry(...)
        (False) or dead(...)."""
        await self._settle(message, outcome(result))

    async def close(self) -> None:
        """Stops and drains (see the module docstring); safe to call
        twice."""
        if self._closed:
            return
        self._closed = True
        self.stop()
        for task in self._streams:
            task.cancel()
        await asyncio.gather(*self._streams, return_exceptions=True)
        if self._workers:
            # Idle workers end now; busy ones finish their message.
            for task in self._workers:
                if task not in self._busy:
                    task.cancel()
            _, running = await asyncio.wait(self._workers,
                                            timeout=self.drain_timeout)
            for task in running:
                task.cancel()
            await asyncio.gather(*self._workers, return_exceptions=True)
        if self._inbox is not None:
            unstarted: List[Message] = []
            while not self._inbox.empty():
                unstarted.append(self._inbox.get_nowait())
            for message in unstarted:
                await self._settle(message, Retry(
                    0.0, "consumer stopped before it"), begun=False)
        for task in self._heartbeats:
            task.cancel()
        await asyncio.gather(*self._heartbeats, return_exceptions=True)
        # Each flusher finishes a send under way, sends the rest, returns.
        for server in self._servers.values():
            server.closing = True
            server.acks_waiting.set()
        await asyncio.gather(*self._flushers, return_exceptions=True)
        for server in self._servers.values():
            await server.channel.close()

    # The streams.

    async def _stream(self, server: _Server) -> None:
        request = messaging_pb2.MessageStreamRequest(
            keyspace=self.keyspace, name=self.table,
            max_unacked=self.max_unacked, group=self.group)
        backoff = Backoff()
        started_once = False
        assert self._inbox is not None
        while True:
            call = server.stub.MessageStream(
                request, metadata=self._md, wait_for_ready=False)
            fields: Optional[List[messaging_pb2.Field]] = None
            try:
                async for response in call:
                    if fields is None:
                        if not response.fields:
                            raise ProtocolError("first response has no "
                                                "fields")
                        fields = list(response.fields)
                        started_once = True
                        backoff.reset()
                        await self._learn_ack_wait(server)
                    for row in response.rows:
                        await self._inbox.put(Message(
                            fields, decode_row(fields, row), row.epoch,
                            server.name))
                if not started_once:
                    raise ProtocolError("stream ended before sending fields")
                code, details = grpc.StatusCode.UNAVAILABLE, "stream ended"
            except grpc.RpcError as e:
                code = e.code() if isinstance(e.code(), grpc.StatusCode) \
                    else grpc.StatusCode.UNKNOWN
                if code not in RETRYABLE or not (
                        started_once or self.retry_initial_connect):
                    self._fail(from_rpc(e))
                    return
                details = e.details() or ""
            except ProtocolError as e:
                self._fail(e)
                return
            finally:
                call.cancel()
            delay = backoff.next()
            if self.on_reconnect:
                self.on_reconnect(server.name, code, details, delay)
            await asyncio.sleep(delay)

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self.stop()

    async def _learn_ack_wait(self, server: _Server) -> None:
        if self.ack_wait is not None or not self.ack or \
                self.max_extension < 0 or self.group:
            return
        try:
            tables = await server.stub.ListTables(
                messaging_pb2.ListTablesRequest(), timeout=self.ack_timeout,
                metadata=self._md)
        except grpc.RpcError as e:
            print("%s: %s: ListTables for the ack wait failed: %s"
                  % (LOG_PREFIX, server.name, e), file=sys.stderr)
            return
        for t in tables.tables:
            if t.name == self.table and (not self.keyspace
                                         or t.keyspace == self.keyspace):
                server.ack_wait = t.settings.ack_wait
                return

    # Handlers and settling.

    async def _work(self) -> None:
        assert self._inbox is not None and self._stopping is not None
        task = asyncio.current_task()
        assert task is not None
        while not self._stopping.is_set():
            message = await self._inbox.get()
            self._busy.add(task)
            try:
                self._begin(message)
                settled = await self._call_handler(message)
                self.handled += 1
                await self._settle(message, settled)
            finally:
                self._busy.discard(task)

    async def _call_handler(self, message: Message) -> Outcome:
        assert self.handler is not None
        span = None
        if self._spans is not None:
            try:
                span = self._spans.start(message)
            except Exception as e:
                print("msgq: OpenTelemetry span not started: %r" % (e,),
                      file=sys.stderr)
        error: Optional[BaseException] = None
        try:
            if span is not None:
                assert self._spans is not None
                with self._spans.otel.use_span(
                        span, end_on_exit=False, record_exception=False,
                        set_status_on_exception=False):
                    settled = await self._invoke(message)
            else:
                settled = await self._invoke(message)
        except Exception as e:  # the handler's failure: retry
            print("%s: handler failed: %r" % (LOG_PREFIX, e),
                  file=sys.stderr)
            settled, error = thrown(e), e
        if span is not None:
            assert self._spans is not None
            self._spans._end_quietly(span, settled, error)
        return settled

    async def _invoke(self, message: Message) -> Outcome:
        assert self.handler is not None
        result = self.handler(message)
        if inspect.isawaitable(result):
            result = await result
        return outcome(result)

    def _begin(self, message: Message) -> None:
        server = self._servers[message.server]
        now = time.monotonic()
        server.running[(message.raw_id, message.epoch)] = _Running(
            messaging_pb2.Delivery(id=message.raw_id, epoch=message.epoch),
            now, now)

    async def _settle(self, message: Message, settled: Outcome,
                      begun: bool = True) -> None:
        server = self._servers[message.server]
        if begun:
            server.running.pop((message.raw_id, message.epoch), None)
        if not self.ack:
            return
        if isinstance(settled, Ack):
            server.pending_acks.append(message.raw_id)
            server.acks_waiting.set()
            return
        delay, reason, is_dead = settled.key()
        request = messaging_pb2.MessageNackRequest(
            keyspace=self.keyspace, name=self.table,
            deliveries=[messaging_pb2.Delivery(id=message.raw_id,
                                               epoch=message.epoch)],
            reason=reason, dead=is_dead, group=self.group)
        if delay is not None:
            request.delay.value = float(delay)
        try:
            await server.stub.MessageNack(request, timeout=self.ack_timeout,
                                          metadata=self._md)
        except grpc.RpcError as e:
            # Not fatal: an unsettled delivery comes back after its ack wait.
            print("%s: nack failed: %s" % (LOG_PREFIX, from_rpc(e)),
                  file=sys.stderr)

    async def _flush_acks(self, server: _Server) -> None:
        while not server.closing:
            await server.acks_waiting.wait()
            deadline = time.monotonic() + self.ack_delay
            while (len(server.pending_acks) < self.ack_batch
                   and time.monotonic() < deadline and not server.closing):
                await asyncio.sleep(min(0.01, self.ack_delay))
            await self._send_acks(server)
        await self._send_acks(server)

    async def _send_acks(self, server: _Server) -> None:
        while server.pending_acks:
            ids = server.pending_acks[:self.ack_batch]
            del server.pending_acks[:self.ack_batch]
            request = messaging_pb2.MessageAckRequest(
                keyspace=self.keyspace, name=self.table, ids=ids,
                group=self.group)
            for attempt in range(3):
                try:
                    await server.stub.MessageAck(
                        request, timeout=self.ack_timeout, metadata=self._md)
                    break
                except grpc.RpcError as e:
                    error = from_rpc(e)
                    if attempt == 2 or not isinstance(error, ServerError) \
                            or error.code() not in RETRYABLE:
                        print("%s: ack failed: %s" % (LOG_PREFIX, error),
                              file=sys.stderr)
                        break
        if not server.closing:
            server.acks_waiting.clear()

    async def _heartbeat(self, server: _Server) -> None:
        while True:
            if not server.ack_wait or server.ack_wait <= 0:
                await asyncio.sleep(0.1)
                continue
            ack_wait = server.ack_wait
            interval = self.heartbeat_fraction * ack_wait
            now = time.monotonic()
            for key, entry in list(server.running.items()):
                if now < entry.last_try + interval:
                    continue
                left = entry.received + ack_wait + self.max_extension - now
                if left <= 0:
                    continue  # held as long as max_extension allows
                entry.last_try = now
                request = messaging_pb2.MessageExtendRequest(
                    keyspace=self.keyspace, name=self.table,
                    deliveries=[entry.delivery],
                    duration=min(ack_wait, left))
                try:
                    response = await server.stub.MessageExtend(
                        request, timeout=self.ack_timeout, metadata=self._md)
                except grpc.RpcError as e:
                    print("%s: extend failed: %s" % (LOG_PREFIX, from_rpc(e)),
                          file=sys.stderr)
                    continue
                if response.extended:
                    self.extended += 1
                else:  # sent again or settled meanwhile: never again
                    self.lost += 1
                    server.running.pop(key, None)
            now = time.monotonic()
            next_due = min((e.last_try + interval
                            for e in server.running.values()),
                           default=now + interval)
            await asyncio.sleep(min(max(next_due - now, 0.01), interval))
