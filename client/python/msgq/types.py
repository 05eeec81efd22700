"""The values msgq returns to users: frozen dataclasses, no generated
protobuf types. Durations are float seconds, instants timezone-aware UTC
datetimes (None when unknown), ids str (bytes only for an id that is not
UTF-8, such as a binary(16) one).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional, Tuple, Union

from msgq.v1 import messaging_pb2

# What the client calls take as a message id: str (UTF-8 on the wire) or the
# bytes as streamed.
Id = Union[str, bytes]


def wire_id(id_: Id) -> bytes:
    """`id_` as the API carries it. Raises TypeError for anything else than
    str or bytes (an int id is given as str(n))."""
    if isinstance(id_, bytes):
        return id_
    if isinstance(id_, str):
        return id_.encode("utf-8")
    raise TypeError("a message id is str or bytes, got %r" % (id_,))


def user_id(raw: bytes) -> Id:
    """An id from the API: str when it is UTF-8, else the bytes."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _instant(unix_ns: int) -> Optional[datetime]:
    if unix_ns == 0:
        return None
    return datetime.fromtimestamp(unix_ns / 1e9, tz=timezone.utc)


@dataclass(frozen=True)
class Table:
    """A message table: `name` in database `keyspace` ("" = the server's
    default)."""

    name: str
    keyspace: str = ""


@dataclass(frozen=True)
class Delivery:
    """One send of a message: its id and the epoch it was sent with (what
    nack and extend take, so that a stale holder changes nothing)."""

    id: Id
    epoch: int = 0

    def to_wire(self) -> messaging_pb2.Delivery:
        return messaging_pb2.Delivery(id=wire_id(self.id), epoch=self.epoch)


@dataclass(frozen=True)
class Nacked:
    """What a nack did: messages now due again later, and now dead."""

    retried: int
    dead: int


@dataclass(frozen=True)
class DeadMessage:
    """A dead message: its id, the sends before it died, the last failure's
    reason ("" without a last_error column), and when it died and was
    enqueued (None without a time_dead / time_created column)."""

    id: Id
    epoch: int
    last_error: str
    time_dead: Optional[datetime]
    time_created: Optional[datetime]

    @classmethod
    def from_wire(cls, m: messaging_pb2.DeadMessage) -> "DeadMessage":
        return cls(user_id(m.id), m.epoch, m.last_error,
                   _instant(m.time_dead), _instant(m.time_created))


@dataclass(frozen=True)
class TableSettings:
    """A table's directives (its vitess_message comment); 0 = not set."""

    ack_wait: float
    purge_after: float
    batch_size: int
    cache_size: int
    poller_interval: float
    min_backoff: float
    max_backoff: float  # 0 = unbounded
    message_columns: Tuple[str, ...]
    max_attempts: int  # 0 = unlimited
    max_age: float  # 0 = unlimited
    dead_retention: float  # 0 = kept until redriven or deleted
    rate_limit: float  # sends per second; 0 = unlimited
    rate_burst: float
    order_by: str
    fair_by: str
    concurrency_by: str
    concurrency: int


@dataclass(frozen=True)
class Ownership:
    """Which msgqd sends the table: `state` is "owner", "standby", "off"
    (leases disabled) or "unknown" (see `error`)."""

    state: str
    owner: str
    since: Optional[datetime]
    expires: Optional[datetime]
    error: str


@dataclass(frozen=True)
class TableStatus:
    """A table as one msgqd serves it: settings, ownership, the counts now
    (cached, in flight, dead: -1 until known) and counters since that msgqd
    started serving it."""

    table: Table
    loaded: bool
    load_error: str
    paused: bool
    subscribers: int
    discovery: str  # "binlog" or "poll"
    settings: TableSettings
    ownership: Ownership
    cached: int
    in_flight: int
    dead: int
    sent: int
    redelivered: int
    postponed: int
    acked: int
    nacked: int
    died: int
    purged: int
    polls: int
    keys_at_limit: int

    @classmethod
    def from_wire(cls, t: messaging_pb2.TableStatus) -> "TableStatus":
        s, o = t.settings, t.ownership
        return cls(
            table=Table(t.name, t.keyspace), loaded=t.loaded,
            load_error=t.error, paused=t.paused, subscribers=t.subscribers,
            discovery=t.discovery,
            settings=TableSettings(
                s.ack_wait, s.purge_after, s.batch_size, s.cache_size,
                s.poller_interval, s.min_backoff, s.max_backoff,
                tuple(s.message_cols), s.max_attempts, s.max_age,
                s.dead_retention, s.rate_limit, s.rate_burst, s.order_by,
                s.fair_by, s.concurrency_by, s.concurrency),
            ownership=Ownership(o.state, o.owner, _instant(o.since),
                                _instant(o.expires), o.error),
            cached=t.cached, in_flight=t.in_flight, dead=t.dead,
            sent=t.sent, redelivered=t.redelivered, postponed=t.postponed,
            acked=t.acked, nacked=t.nacked, died=t.died, purged=t.purged,
            polls=t.polls, keys_at_limit=t.keys_at_limit)
