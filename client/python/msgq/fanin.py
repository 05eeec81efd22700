"""consume_all(): one table from several msgqd servers at once (fan-in:
shards, or instances sharing a database).

Each server gets its own thread running consume() on its own channel, so
every message is acked or nacked on the server it came from
(message.server): ids are unique only within a shard, so the same id on
another server is another message.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc

from msgq.consume import Handler, OnReconnect, consume
from msgq.message import Message
from msgq.results import HandlerResult, Retry
from msgq.trace import ConsumerSpans

# on_reconnect(server, code, details, delay_seconds)
OnServerReconnect = Callable[[str, grpc.StatusCode, str, float], None]


def consume_all(servers: Sequence[Tuple[str, grpc.Channel]], table: str,
                handler: Handler, count: int = 0,
                on_reconnect: Optional[OnServerReconnect] = None,
                stop: Optional[threading.Event] = None, tracing: bool = True,
                tracer_provider: Any = None, **kwargs: Any) -> int:
    """consume() from several servers at once: `servers` is a list of (name,
    channel). One thread per server streams and settles its own messages:
    each message's ack or nack goes to the server it came from
    (message.server). `handler` runs under a lock, one message at a time.
    With `count`, stops once `count` messages were handled in total (later
    ones are handed back at once), closing the other streams; setting the
    threading.Event `stop` stops too. The channels are closed on return.
    Returns the number handled; raises the first error that ended a
    server's consume (the others are then stopped). `tracing` and
    `tracer_provider`: as consume()'s (one span per handler call; a message
    handed back unhandled gets none). Other keyword arguments go to
    consume()."""
    spans = ConsumerSpans.create(table, kwargs.get("keyspace", ""), tracing,
                                 tracer_provider)
    call = spans.wrap(handler) if spans is not None else handler
    lock = threading.Lock()
    stopped: threading.Event = stop or threading.Event()
    state: Dict[str, Any] = {"handled": 0, "error": None}

    def counted(message: Message) -> HandlerResult:
        with lock:
            if count and state["handled"] >= count:
                return Retry(delay=0, reason="consumer stopped before it")
            try:
                return call(message)  # raising is a retry: handled too
            finally:
                state["handled"] += 1
                if count and state["handled"] >= count:
                    stopped.set()

    def run(name: str, channel: grpc.Channel) -> None:
        told: Optional[OnReconnect] = None
        if on_reconnect is not None:
            callback = on_reconnect

            def told(c: grpc.StatusCode, d: str, t: float) -> None:
                callback(name, c, d, t)
        try:
            consume(channel, table, counted, server=name, stop=stopped,
                    tracing=False,  # the spans are made around `handler`
                    on_reconnect=told, **kwargs)
        except Exception as e:  # first error ends all
            with lock:
                if state["error"] is None:
                    state["error"] = e
            stopped.set()

    threads: List[threading.Thread] = [
        threading.Thread(target=run, args=(name, channel), daemon=True)
        for name, channel in servers]
    for t in threads:
        t.start()
    stopped.wait()
    # Threads mid-batch finish settling it; the others sit in their stream
    # until their channel is closed.
    for t in threads:
        t.join(timeout=2)
    for _, channel in servers:
        channel.close()
    for t in threads:
        t.join()
    if state["error"] is not None:
        raise state["error"]
    return int(state["handled"])
