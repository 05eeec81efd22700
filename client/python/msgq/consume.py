"""consume(): stream one table from one server into a handler and settle.

After each streamed batch the acks go out in one MessageAck and the rest in
one MessageNack per distinct (delay, reason, dead), each naming the
deliveries (id + the epoch they were streamed with). A failed MessageNack is
reported on stderr and not retried: the messages then come back after the
table's ack_wait anyway.

When the stream ends with UNAVAILABLE (server restart, table reload) or the
connection drops, it reconnects with capped exponential backoff and jitter
(100ms doubling to 5s, +-20%). If the very first connection fails, or the
server answers NOT_FOUND / FAILED_PRECONDITION / INVALID_ARGUMENT /
UNAUTHENTICATED / PERMISSION_DENIED, the error is raised.

`metadata` goes with every call (MessageStream, MessageAck, MessageNack):
pass bearer_metadata(token), ("authorization", "Bearer <token>"), there, so
tokens work on plaintext channels as well as TLS ones. msgq.Subscriber is
the subscriber with handler concurrency, heartbeats and a drain.

Handler outcomes (msgq.results, the same as the C++, Node and Go clients):
ack() (or None, True), retry(delay, reason) (False: retry()), dead(reason);
an exception, or a return value
that is not a result, is a retry with the table's backoff and the error's
text as the reason. With `tracing` (the default) and opentelemetry
importable, each handler call runs in a CONSUMER span (msgq.trace).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc

from msgq.backoff import Backoff
from msgq.errors import ProtocolError, from_rpc
from msgq.message import Message, decode_row
from msgq.results import Ack, HandlerResult, NackKey, Outcome, outcome, thrown
from msgq.trace import ConsumerSpans
from msgq.v1 import messaging_pb2
from msgq.v1 import messaging_pb2_grpc

RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.CANCELLED,
}

# Reconnect within 100ms..5s rather than gRPC's default 1s..120s. (Not
# grpc.min_reconnect_backoff_ms: gRPC uses it as the connect timeout.)
CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5000),
]

# The prefix of what the library reports on stderr (log scrapers match it).
LOG_PREFIX = "msgq_consume"

Handler = Callable[[Message], HandlerResult]
Metadata = Sequence[Tuple[str, str]]
# on_reconnect(code, details, delay_seconds)
OnReconnect = Callable[[grpc.StatusCode, str, float], None]


def consume(channel: grpc.Channel, table: str, handler: Handler,
            keyspace: str = "", ack: bool = True, count: int = 0,
            ack_timeout: float = 10.0, backoff: Optional[Backoff] = None,
            on_reconnect: Optional[OnReconnect] = None,
            sleep: Callable[[float], None] = time.sleep, server: str = "",
            stop: Optional[threading.Event] = None,
            metadata: Optional[Metadata] = None, tracing: bool = True,
            tracer_provider: Any = None,
            idle: Optional[threading.Event] = None) -> int:
    """Streams `table` into `handler(message)` until `count` messages (0 = no
    limit). The handler's results are sent once per streamed batch when
    `ack`: one MessageAck, then one MessageNack per distinct (delay, reason,
    dead); without `ack` nothing is sent. Returns the number of messages
    handled. Raises msgq.errors.ServerError (UnknownTable, Unavailable,
    PermissionDenied, ...; also a grpc.RpcError) for errors that are not
    worth a retry, or when the first connection fails, and ProtocolError
    for a malformed stream. A handler that raises, or returns something else than a result,
    retries its message with the table's backoff (see handle()). `server`
    becomes each Message.server; once the threading.Event `stop` is set,
    returns after the current batch (and, instead of retrying, when the
    stream is cancelled, e.g. by closing the channel). `metadata` is sent with every call. `tracing`: a CONSUMER
    span per handled message when opentelemetry is importable, from
    `tracer_provider` (default: the global one); see msgq.trace. `idle`,
    when given, is set while no streamed batch is in hand (waiting for the
    stream), so that a caller stopping it knows when closing the channel
    cuts no batch short; a batch that arrives once `stop` is set is not
    handled (it comes back after the ack wait)."""
    spans = ConsumerSpans.create(table, keyspace, tracing, tracer_provider)
    call = spans.wrap(handler) if spans is not None else handler
    stub = messaging_pb2_grpc.MessagingStub(channel)
    md = tuple(metadata) if metadata else None
    request = messaging_pb2.MessageStreamRequest(
        keyspace=keyspace, name=table)
    backoff = backoff or Backoff()
    handled = 0
    started_once = False
    while True:
        # After a first success, wait for the channel to reconnect instead of
        # failing fast while the server is down: the stream starts as soon
        # as the server listens again (on_reconnect is called once).
        stream = stub.MessageStream(request, wait_for_ready=started_once,
                                    metadata=md)
        fields = None
        if idle is not None:
            idle.set()
        try:
            for response in stream:
                if idle is not None:
                    idle.clear()
                    if stop is not None and stop.is_set():
                        return handled
                if fields is None:
                    if not response.fields:
                        raise ProtocolError("first response has no fields")
                    fields = list(response.fields)
                    started_once = True
                    backoff.reset()
                ids: List[bytes] = []
                # (delay, reason, dead) -> deliveries, in order
                nacks: Dict[NackKey, List[messaging_pb2.Delivery]] = {}
                for row in response.rows:
                    message = Message(fields, decode_row(fields, row),
                                      row.epoch, server)
                    settled = handle(call, message)
                    if isinstance(settled, Ack):
                        ids.append(message.raw_id)
                    else:
                        nacks.setdefault(settled.key(), []).append(
                            messaging_pb2.Delivery(id=message.raw_id,
                                                   epoch=message.epoch))
                    handled += 1
                    if count and handled >= count:
                        break
                if ack and ids:
                    try:
                        stub.MessageAck(messaging_pb2.MessageAckRequest(
                            keyspace=keyspace, name=table, ids=ids),
                            timeout=ack_timeout, metadata=md)
                    except grpc.RpcError as e:
                        raise from_rpc(e) from e
                if ack:
                    _send_nacks(stub, keyspace, table, nacks, ack_timeout, md)
                if count and handled >= count:
                    return handled
                if stop is not None and stop.is_set():
                    return handled
                if idle is not None:
                    idle.set()
            # The server is not supposed to end a stream successfully.
            if not started_once:
                raise ProtocolError("stream ended before sending fields")
            code, details = grpc.StatusCode.UNAVAILABLE, "stream ended"
        except grpc.RpcError as e:
            if stop is not None and stop.is_set():
                return handled
            if e.code() not in RETRYABLE or not started_once:
                raise from_rpc(e) from e
            code, details = e.code(), e.details()
        finally:
            stream.cancel()
        delay = backoff.next()
        if on_reconnect:
            on_reconnect(code, details, delay)
        sleep(delay)


def handle(handler: Callable[[Message], HandlerResult],
           message: Message) -> Outcome:
    """Runs `handler` on `message` and returns its outcome: an exception, or
    a return value that is not a result, is a retry with the table's
    backoff and the error's text as the reason (reported on stderr)."""
    try:
        return outcome(handler(message))
    except Exception as e:  # the handler's failure: retry
        print("%s: handler failed: %r" % (LOG_PREFIX, e), file=sys.stderr)
        return thrown(e)


def _send_nacks(stub: messaging_pb2_grpc.MessagingStub, keyspace: str,
                table: str,
                nacks: Dict[NackKey, List[messaging_pb2.Delivery]],
                timeout: float, metadata: Optional[Metadata]) -> None:
    for (delay, reason, is_dead), deliveries in nacks.items():
        request = messaging_pb2.MessageNackRequest(
            keyspace=keyspace, name=table,
            deliveries=deliveries, reason=reason, dead=is_dead)
        if delay is not None:
            request.delay.value = float(delay)
        try:
            stub.MessageNack(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as e:
            # Not fatal: unsettled deliveries come back after ack_wait.
            print("%s: nack failed: %s: %s"
                  % (LOG_PREFIX, e.code().name, e.details()), file=sys.stderr)
