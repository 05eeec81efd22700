"""Client: the unary calls of msgqd's API (ack, nack, extend, dead letters,
redrive, pause and resume, the table list), blocking.

    with msgq.Client("db1:15999", keyspace="app", token=token) as client:
        client.ack("orders", ["42"])
        for m in client.list_dead("orders", limit=50):
            print(m.id, m.last_error)
        client.redrive("orders", [m.id for m in dead])
        client.pause("orders")

A table is a name (in the client's `keyspace`) or a msgq.Table(name,
keyspace). Ids are str (UTF-8 on the wire) or bytes; a Message's
`delivery` is what nack() and extend() take (a Message itself works too).
Results are frozen dataclasses (msgq.types). Errors: ValueError or TypeError
for an argument refused here, msgq.errors.ServerError subclasses for the
server's answer (UnknownTable, InvalidArgument, Unavailable for a call worth
retrying, PermissionDenied, ...). Every call has a deadline of `timeout`
seconds.

msgq.aio.AsyncClient is the same on asyncio. Thread-safety: a Client may be
used from several threads at once (a gRPC channel is).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import grpc

from msgq.consume import CHANNEL_OPTIONS, Metadata
from msgq.errors import ClosedError, from_rpc
from msgq.message import Message
from msgq.subscriber import TLS, bearer_metadata, make_channel, read_token_file
from msgq.types import (DeadMessage, Delivery, Id, Nacked, Table,
                        TableStatus, wire_id)
from msgq.v1 import messaging_pb2
from msgq.v1 import messaging_pb2_grpc

TableArg = Union[str, Table]
DeliveryArg = Union[Delivery, Message]

# ListDead's cap on one page (docs/api.md).
MAX_LIST_DEAD = 10000


def token_metadata(token: Optional[str], token_file: Optional[str]
                   ) -> Metadata:
    """The authorization metadata for `token` or the first line of
    `token_file` (not both)."""
    if token is not None and token_file is not None:
        raise ValueError("give token or token_file, not both")
    if token_file is not None:
        token = read_token_file(token_file)
    return bearer_metadata(token)


class Requests:
    """The request protos of the unary calls, arguments checked here (the
    part Client and AsyncClient share)."""

    def __init__(self, keyspace: str) -> None:
        self.keyspace = keyspace

    def table(self, table: TableArg) -> Tuple[str, str]:
        """(keyspace, name) of `table`."""
        if isinstance(table, Table):
            keyspace, name = table.keyspace, table.name
        elif isinstance(table, str):
            keyspace, name = self.keyspace, table
        else:
            raise TypeError("a table is a str or msgq.Table, got %r"
                            % (table,))
        if not name:
            raise ValueError("empty table name")
        return keyspace, name

    def ack(self, table: TableArg, ids: Iterable[Id], group: str = ""
            ) -> messaging_pb2.MessageAckRequest:
        keyspace, name = self.table(table)
        return messaging_pb2.MessageAckRequest(
            keyspace=keyspace, name=name, ids=ids_of(ids), group=group)

    def nack(self, table: TableArg, deliveries: Iterable[DeliveryArg],
             delay: Optional[float], reason: str, dead: bool
             ) -> messaging_pb2.MessageNackRequest:
        keyspace, name = self.table(table)
        request = messaging_pb2.MessageNackRequest(
            keyspace=keyspace, name=name, deliveries=deliveries_of(deliveries),
            reason=reason, dead=dead)
        if delay is not None:
            seconds = float(delay)
            if not math.isfinite(seconds) or seconds < 0:
                raise ValueError("nack delay must be finite and not negative,"
                                 " got %r" % (delay,))
            request.delay.value = seconds
        return request

    def extend(self, table: TableArg, deliveries: Iterable[DeliveryArg],
               duration: float) -> messaging_pb2.MessageExtendRequest:
        keyspace, name = self.table(table)
        seconds = float(duration)
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError("extend duration must be positive, got %r"
                             % (duration,))
        return messaging_pb2.MessageExtendRequest(
            keyspace=keyspace, name=name,
            deliveries=deliveries_of(deliveries), duration=seconds)

    def list_dead(self, table: TableArg, limit: int, after_id: Optional[Id]
                  ) -> messaging_pb2.ListDeadRequest:
        keyspace, name = self.table(table)
        if not 0 < limit <= MAX_LIST_DEAD:
            raise ValueError("limit must be in 1..%d, got %r"
                             % (MAX_LIST_DEAD, limit))
        return messaging_pb2.ListDeadRequest(
            keyspace=keyspace, name=name, limit=limit,
            after_id=b"" if after_id is None else wire_id(after_id))

    def redrive(self, table: TableArg, ids: Optional[Iterable[Id]]
                ) -> messaging_pb2.RedriveRequest:
        keyspace, name = self.table(table)
        if ids is None:
            return messaging_pb2.RedriveRequest(
                keyspace=keyspace, name=name, all=True)
        return messaging_pb2.RedriveRequest(
            keyspace=keyspace, name=name, ids=ids_of(ids))

    def set_paused(self, table: TableArg, paused: bool
                   ) -> messaging_pb2.SetPausedRequest:
        keyspace, name = self.table(table)
        return messaging_pb2.SetPausedRequest(
            keyspace=keyspace, name=name, paused=paused)


def ids_of(ids: Iterable[Id]) -> List[bytes]:
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids is a list of ids, not one id: [%r]" % (ids,))
    return [wire_id(i) for i in ids]


def deliveries_of(deliveries: Iterable[DeliveryArg]
                  ) -> List[messaging_pb2.Delivery]:
    out = []
    for d in deliveries:
        if isinstance(d, Message):
            out.append(messaging_pb2.Delivery(id=d.raw_id, epoch=d.epoch))
        elif isinstance(d, Delivery):
            out.append(d.to_wire())
        else:
            raise TypeError("a delivery is a msgq.Delivery or msgq.Message, "
                            "got %r" % (d,))
    return out


class Client:
    """The unary calls on one msgqd (see the module docstring). `keyspace`:
    the database of tables given by name ("" = the server's default).
    `channel`: a grpc.Channel of your own instead of one to `server` (then
    `tls` and `channel_options` are not used, and close() leaves it
    open)."""

    def __init__(self, server: str = "", *, keyspace: str = "",
                 tls: Optional[TLS] = None, token: Optional[str] = None,
                 token_file: Optional[str] = None, timeout: float = 10.0,
                 channel_options: Sequence[Tuple[str, object]] =
                 CHANNEL_OPTIONS,
                 channel: Optional[grpc.Channel] = None) -> None:
        if channel is None and not server:
            raise ValueError("no server given")
        self._metadata = tuple(token_metadata(token, token_file)) or None
        self._requests = Requests(keyspace)
        self.timeout = timeout
        self._own_channel = channel is None
        self._channel = channel if channel is not None else make_channel(
            server, tls, channel_options)
        self._stub = messaging_pb2_grpc.MessagingStub(self._channel)
        self._closed = False

    def _call(self, method: str, request: object) -> Any:
        if self._closed:
            raise ClosedError("the Client is closed")
        try:
            return getattr(self._stub, method)(
                request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc(e) from e

    def ack(self, table: TableArg, ids: Iterable[Id], *,
            group: str = "") -> int:
        """Acknowledges `ids`; returns how many went from unacked to acked
        (unknown, dead and already acked ids count 0). `group`: a consumer
        group's acks, that group's alone ("" = the default group)."""
        response = self._call(
            "MessageAck", self._requests.ack(table, ids, group))
        return int(response.acked)

    def nack(self, table: TableArg, deliveries: Iterable[DeliveryArg], *,
             delay: Optional[float] = None, reason: str = "",
             dead: bool = False) -> Nacked:
        """Hands deliveries back: due again after `delay` seconds (None =
        the table's backoff), or dead now with `dead`; `reason` goes to
        last_error. A delivery whose epoch is stale counts 0."""
        response = self._call(
            "MessageNack",
            self._requests.nack(table, deliveries, delay, reason, dead))
        return Nacked(response.retried, response.dead)

    def extend(self, table: TableArg, deliveries: Iterable[DeliveryArg],
               duration: float) -> int:
        """Keeps deliveries for `duration` more seconds (up to msgqd's
        --max_extend); returns how many were extended."""
        response = self._call(
            "MessageExtend", self._requests.extend(table, deliveries,
                                                   duration))
        return int(response.extended)

    def list_dead(self, table: TableArg, *, limit: int = 100,
                  after_id: Optional[Id] = None) -> List[DeadMessage]:
        """Up to `limit` dead messages in id order, after `after_id` (the
        last id of the previous page) when given."""
        response = self._call(
            "ListDead", self._requests.list_dead(table, limit, after_id))
        return [DeadMessage.from_wire(m) for m in response.messages]

    def redrive(self, table: TableArg, ids: Iterable[Id]) -> int:
        """Makes the dead messages `ids` due again (epoch back to 0);
        returns how many were dead."""
        response = self._call(
            "Redrive", self._requests.redrive(table, ids))
        return int(response.redriven)

    def redrive_all(self, table: TableArg) -> int:
        """Makes every dead message of `table` due again."""
        response = self._call(
            "Redrive", self._requests.redrive(table, None))
        return int(response.redriven)

    def pause(self, table: TableArg) -> None:
        """Stops sending `table`'s messages until resume()."""
        self._call("SetPaused", self._requests.set_paused(table, True))

    def resume(self, table: TableArg) -> None:
        """Sends `table`'s messages again after pause()."""
        self._call("SetPaused", self._requests.set_paused(table, False))

    def list_tables(self) -> List[TableStatus]:
        """Every message table the server serves, with its status."""
        response = self._call(
            "ListTables", messaging_pb2.ListTablesRequest())
        return [TableStatus.from_wire(t) for t in response.tables]

    def close(self) -> None:
        """Closes the channel (unless it was given); later calls raise
        msgq.errors.ClosedError."""
        if not self._closed:
            self._closed = True
            if self._own_channel:
                self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
