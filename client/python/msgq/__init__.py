"""msgq: a Python client of msgqd (gRPC API msgq.v1.Messaging).

    import msgq

    def handler(message: msgq.Message) -> msgq.HandlerResult:
        if message.get("message") is None:
            return msgq.dead("NULL message")
        if not backend_up():
            return msgq.retry(delay=30, reason="backend down")
        process(message)          # raising retries it with the table's backoff
        return msgq.ack()         # returning None acks too

    with msgq.Subscriber("127.0.0.1:15999", "orders", handler) as sub:
        sub.run()                 # sub.stop() from another thread ends it

Errors are msgq.MsgqError subclasses (msgq.errors): UnknownTable,
Unavailable, PermissionDenied, ... for the server's answers.

A producer writes msgq.traceparent() (and msgq.tracestate()) into the
table's `traceparent`/`tracestate` columns in the INSERT that enqueues a
message; the consumer sees message.trace_context and, with opentelemetry
importable, a CONSUMER span per handled message (msgq.trace).

msgq.Inbox wraps a handler so that its work in the consumer's own database
happens once per message, whatever msgq redelivers (msgq.inbox,
docs/effectively-once.md).

Subscriber (msgq.subscriber) takes several servers, handler concurrency,
TLS and a bearer token, extends the messages of running handlers
(heartbeats) and drains on stop(); msgq.aio.AsyncSubscriber is the same on
asyncio. consume() and consume_all() are simpler loops on channels you make
yourself: one handler call at a time, settled once per streamed batch, no
heartbeats. The generated stubs are msgq.v1.messaging_pb2 and
msgq.v1.messaging_pb2_grpc. The console script msgq-consume prints a table's
messages as JSON lines (msgq.cli).
"""

# In a source checkout the stubs are generated into the build tree
# (build/client/python/msgq/v1): with that directory on sys.path, msgq.v1 is
# found there too. An installed package has msgq/v1 inside.
import pkgutil as _pkgutil

__path__ = _pkgutil.extend_path(__path__, __name__)

from msgq.backoff import Backoff  # noqa: E402
from msgq.client import Client  # noqa: E402
from msgq.consume import CHANNEL_OPTIONS, RETRYABLE, consume  # noqa: E402
from msgq.fanin import consume_all  # noqa: E402
from msgq.inbox import Inbox, InboxError  # noqa: E402
from msgq import errors  # noqa: E402
from msgq.errors import MsgqError, ProtocolError  # noqa: E402
from msgq.message import Message, decode_row  # noqa: E402
from msgq.results import (Ack, Dead, HandlerResult, Retry, ack,  # noqa: E402
                          dead, outcome, retry)
from msgq.producer import (Enqueued, Outgoing, enqueue,  # noqa: E402
                           enqueue_batch, enqueue_dedup,
                           enqueue_dedup_batch, uuidv7)
from msgq.subscriber import (TLS, Subscriber, bearer_metadata,  # noqa: E402
                             make_channel)
from msgq.types import (DeadMessage, Delivery, Nacked, Ownership,  # noqa: E402
                        Table, TableSettings, TableStatus)
from msgq.trace import (TraceContext, parse_traceparent,  # noqa: E402
                        trace_columns, traceparent, tracestate)

__version__ = "0.1.0"

__all__ = [
    "Ack", "Backoff", "CHANNEL_OPTIONS", "Client", "Dead", "DeadMessage",
    "Delivery", "Nacked", "Ownership", "Table", "TableSettings",
    "TableStatus", "HandlerResult", "Outgoing", "enqueue", "enqueue_batch",
    "Enqueued", "enqueue_dedup", "enqueue_dedup_batch",
    "uuidv7", "Inbox",
    "InboxError", "Message", "MsgqError", "ProtocolError", "RETRYABLE", "Retry",
    "Subscriber", "TLS",
    "TraceContext", "ack", "bearer_metadata", "consume", "consume_all",
    "dead", "decode_row", "errors", "make_channel", "outcome", "parse_traceparent",
    "retry", "trace_columns", "traceparent", "tracestate",
]
