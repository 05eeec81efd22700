"""The producer side: enqueue messages with an INSERT on the application's
own MySQLdb connection, inside its transaction, so that a message exists if
and only if the transaction that made it commits (no dual write).

    cur = conn.cursor()
    cur.execute("INSERT INTO orders (id, total) VALUES (%s, %s)",
                (order_id, total))
    msg_id = msgq.enqueue(conn, "order_events",
                          {"order": order_id, "total": total},  # JSON
                          key=customer_id,          # message_key
                          type="order.placed",      # message_type
                          headers={"source": "web"},  # headers, JSON
                          delay=10)                 # time_next = NOW(6) + 10 s
    conn.commit()                                   # both or neither

The row, as the Go and Node clients write it (plain SQL fills the same
columns the same way):
- `id`: `id`, or a new UUIDv7 in its 36-character text form (for a
  char(36)/varchar(36) id; a table with an integer id must give one);
- `message`: `body` (bytes or str as they are, None as NULL, anything else
  json.dumps'd);
- `time_next`: 0 (send now), or CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS
  SIGNED) + the delay in nanoseconds (MySQL's clock);
- `traceparent`, `tracestate`: the OpenTelemetry context's (`context`,
  default the current one; see msgq.trace) when there is a valid span, each
  only when the table has the column;
- `message_key`, `message_type`, `headers`, `dedup_key`: only when key,
  type, headers or dedup_key are given (the table needs the column then;
  headers sorted by name);
- `columns`: as given, e.g. {"priority": 10}.
Columns not written take their defaults. Without trace columns in the table,
a traced context costs a second INSERT: MySQL refuses the first with
ER_BAD_FIELD_ERROR (1054), which leaves the transaction as it was.

Deduplicated enqueue (docs/tables.md#deduplicated-enqueue), on a table
with `msgq_dedup_window` and a unique `dedup_key`:

    r = msgq.enqueue_dedup(conn, "payments", {"order": 42},
                           dedup_key="order-42-paid")
    conn.commit()
    if r.duplicate: ...   # r.id is the message that already had the key

enqueue_dedup / enqueue_dedup_batch write `INSERT ... ON DUPLICATE KEY
UPDATE id = id`, then read who holds each key (`SELECT ... LOCK IN SHARE
MODE`): a message whose key a row already holds (committed, or committed
by a racing producer while this INSERT waited for it) is not inserted and
comes back as Enqueued(that row's id, duplicate=True). Every message needs
a dedup_key (ValueError otherwise). A message whose id a row with another
key already has raises the connection's IntegrityError (1062), as plain
SQL would. enqueue / enqueue_batch given a dedup_key write it too, and a
duplicate gets MySQL's IntegrityError 1062 like plain SQL.

Errors: ValueError or TypeError for a bad argument, before any statement;
MySQLdb's errors otherwise (IntegrityError 1062 for a duplicate id,
OperationalError 1054 for `key` on a table without message_key). The
connection is the caller's: enqueue neither commits nor rolls back.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from msgq.trace import traceparent, tracestate
from msgq.types import Table

KEY_COLUMN = "message_key"
TYPE_COLUMN = "message_type"
HEADERS_COLUMN = "headers"
DEDUP_COLUMN = "dedup_key"
ER_DUP_ENTRY = 1062
ER_BAD_FIELD_ERROR = 1054
_NAME = re.compile(r"[A-Za-z0-9_$]{1,64}")
_OWN_COLUMNS = {"id", "message", "time_next", KEY_COLUMN, TYPE_COLUMN,
                HEADERS_COLUMN, DEDUP_COLUMN}
_NOW_NS = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)"


def uuidv7(now_ms: Optional[int] = None,
           random: Optional[bytes] = None) -> str:
    """A new UUID version 7 (RFC 9562) in its 36-character text form: 48
    bits of Unix milliseconds, then random bits, so later ids sort later (to
    the millisecond) and new rows go to the end of the primary key."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    rand = os.urandom(10) if random is None else random
    u = bytearray(ms.to_bytes(6, "big") + rand[:10])
    u[6] = 0x70 | (u[6] & 0x0F)  # version 7
    u[8] = 0x80 | (u[8] & 0x3F)  # variant 10
    h = u.hex()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


@dataclass(frozen=True)
class Outgoing:
    """One message to enqueue (see the module docstring for each field's
    column). `delay` in seconds."""

    body: Any = None
    id: Union[str, int, None] = None
    key: Optional[str] = None
    type: Optional[str] = None
    headers: Optional[Mapping[str, str]] = None
    delay: float = 0.0
    columns: Mapping[str, Any] = field(default_factory=dict)
    dedup_key: Optional[str] = None


@dataclass(frozen=True)
class Enqueued:
    """What enqueue_dedup did with one message: `id` is the id of the row
    holding its dedup_key (the message's own when it was inserted), and
    `duplicate` says that row was there before (nothing was inserted)."""

    id: str
    duplicate: bool


# A value for the INSERT: ("value", v) for a placeholder, ("sql", text) for
# an expression of ours.
_Value = Tuple[str, Any]


def _body(body: Any) -> Union[str, bytes, None]:
    if body is None or isinstance(body, (str, bytes)):
        return body
    try:
        return json.dumps(body, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise TypeError("body: %s" % e) from None


def _row(message: Outgoing) -> Tuple[Dict[str, _Value], str]:
    out: Dict[str, _Value] = {}
    for name, value in message.columns.items():
        if not _NAME.fullmatch(name):
            raise ValueError("column %r is not a plain name" % (name,))
        if name in _OWN_COLUMNS:
            raise ValueError("column %s is a message field, not one of "
                             "columns" % name)
        out[name] = ("value", value)
    if message.id is None:
        id_text = uuidv7()
    elif isinstance(message.id, bool) or not isinstance(message.id,
                                                        (str, int)):
        raise TypeError("id %r: give a str or an int" % (message.id,))
    else:
        id_text = str(message.id)
    out["id"] = ("value", id_text)
    out["message"] = ("value", _body(message.body))
    try:
        delay = float(message.delay)
    except (TypeError, ValueError):
        raise TypeError("delay must be a number of seconds, got %r"
                        % (message.delay,)) from None
    if not (delay >= 0 and delay != float("inf")):
        raise ValueError("delay must be a finite number of seconds >= 0, "
                         "got %r" % (message.delay,))
    ns = round(delay * 1e9)
    out["time_next"] = ("value", 0) if ns == 0 else (
        "sql", "%s + %d" % (_NOW_NS, ns))
    if message.key is not None:
        out[KEY_COLUMN] = ("value", str(message.key))
    if message.type is not None:
        out[TYPE_COLUMN] = ("value", str(message.type))
    if message.dedup_key is not None:
        out[DEDUP_COLUMN] = ("value", str(message.dedup_key))
    if message.headers is not None:
        if not all(isinstance(k, str) and isinstance(v, str)
                   for k, v in message.headers.items()):
            raise TypeError("headers must map str to str")
        out[HEADERS_COLUMN] = ("value", json.dumps(
            dict(sorted(message.headers.items())), separators=(",", ":")))
    return out, id_text


def _table_sql(table: Union[str, Table]) -> str:
    ref = table if isinstance(table, Table) else Table(table)
    if not _NAME.fullmatch(ref.name) or (
            ref.keyspace and not _NAME.fullmatch(ref.keyspace)):
        raise ValueError("table %r is not a plain name" % (table,))
    return ("`%s`." % ref.keyspace if ref.keyspace else "") + \
        "`%s`" % ref.name


def _insert(conn: Any, table_sql: str, rows: Sequence[Dict[str, _Value]],
            suffix: str = "") -> None:
    columns = sorted({c for r in rows for c in r})
    args: List[Any] = []
    tuples = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            if v is None:
                cells.append("DEFAULT")
            elif v[0] == "sql":
                cells.append(v[1])
            else:
                cells.append("%s")
                args.append(v[1])
        tuples.append("(" + ", ".join(cells) + ")")
    sql = "INSERT INTO %s (%s) VALUES %s%s" % (
        table_sql, ", ".join("`%s`" % c for c in columns), ", ".join(tuples),
        suffix)
    cursor = conn.cursor()
    try:
        cursor.execute(sql, args)
    finally:
        cursor.close()


def _unknown_column(error: Exception, column: str) -> bool:
    args: Tuple[Any, ...] = getattr(error, "args", ())
    return (len(args) >= 2 and args[0] == ER_BAD_FIELD_ERROR
            and ("'%s'" % column) in str(args[1]))


def _with_trace(rows: Sequence[Dict[str, _Value]], parent: str,
                state: Optional[str]) -> List[Dict[str, _Value]]:
    traced = []
    for r in rows:
        t = dict(r)
        if "traceparent" not in t:
            t["traceparent"] = ("value", parent)
            if "tracestate" not in t and state:
                t["tracestate"] = ("value", state)
        traced.append(t)
    return traced


def _insert_traced(conn: Any, table_sql: str,
                   rows: Sequence[Dict[str, _Value]], context: Any,
                   suffix: str = "") -> None:
    """One INSERT of rows with the trace context of `context`, or without
    it when the table has no trace columns."""
    parent, state = traceparent(context), tracestate(context)
    if parent:
        try:
            _insert(conn, table_sql, _with_trace(rows, parent, state), suffix)
            return
        except Exception as e:
            if state and _unknown_column(e, "tracestate"):
                try:
                    _insert(conn, table_sql, _with_trace(rows, parent, None),
                            suffix)
                    return
                except Exception as again:
                    if not _unknown_column(again, "traceparent"):
                        raise
            elif not _unknown_column(e, "traceparent"):
                raise
            # The table has no trace context columns: enqueue without.
    _insert(conn, table_sql, rows, suffix)


def _built(conn: Any, table: Union[str, Table],
           messages: Sequence[Outgoing]
           ) -> Tuple[str, List[Dict[str, _Value]], List[str]]:
    if not hasattr(conn, "cursor"):
        raise TypeError("enqueue needs a MySQLdb connection")
    table_sql = _table_sql(table)
    if isinstance(messages, Outgoing):
        raise TypeError("enqueue_batch takes a list of messages")
    built = [_row(m) for m in messages]
    return table_sql, [b[0] for b in built], [b[1] for b in built]


def enqueue_batch(conn: Any, table: Union[str, Table],
                  messages: Sequence[Outgoing], *, context: Any = None
                  ) -> List[str]:
    """Inserts `messages` into `table` on `conn` (a MySQLdb connection,
    inside the caller's transaction) with one multi-row INSERT (a column
    some message does not set is DEFAULT in its row); returns their ids in
    text form (what a subscriber's message.id shows). No messages: nothing
    is inserted."""
    table_sql, rows, ids = _built(conn, table, messages)
    if rows:
        _insert_traced(conn, table_sql, rows, context)
    return ids


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(
        value, (bytes, bytearray)) else str(value)


def enqueue_dedup_batch(conn: Any, table: Union[str, Table],
                        messages: Sequence[Outgoing], *, context: Any = None
                        ) -> List[Enqueued]:
    """Inserts the messages whose dedup_key no row holds, with one
    `INSERT ... ON DUPLICATE KEY UPDATE id = id` inside the caller's
    transaction, and returns for each message the id of the row holding its
    key and whether that row was there before (a duplicate: not inserted).
    Two messages of the batch with one key: the second is a duplicate of
    the first. Every message needs a dedup_key."""
    table_sql, rows, ids = _built(conn, table, messages)
    if not rows:
        return []
    keys = [m.dedup_key for m in messages]
    if any(k is None for k in keys):
        raise ValueError("enqueue_dedup: every message needs a dedup_key")
    _insert_traced(conn, table_sql, rows, context,
                   " ON DUPLICATE KEY UPDATE `id` = `id`")
    wanted = sorted({str(k) for k in keys})
    cursor = conn.cursor()
    try:
        # A locking read sees the latest committed rows, whatever the
        # transaction's snapshot.
        cursor.execute(
            "SELECT `%s`, `id` FROM %s WHERE `%s` IN (%s) LOCK IN SHARE MODE"
            % (DEDUP_COLUMN, table_sql, DEDUP_COLUMN,
               ", ".join(["%s"] * len(wanted))), wanted)
        holders = {_text(k): _text(i) for k, i in cursor.fetchall()}
    finally:
        cursor.close()
    out = []
    for key, own in zip(keys, ids):
        holder = holders.get(str(key))
        if holder is None:
            error = getattr(conn, "IntegrityError", RuntimeError)
            raise error(ER_DUP_ENTRY, "id %r is taken by a row without "
                        "dedup_key %r: nothing was inserted for it"
                        % (own, key))
        out.append(Enqueued(holder, holder != own))
    return out


def enqueue_dedup(conn: Any, table: Union[str, Table], body: Any = None, *,
                  dedup_key: str, id: Union[str, int, None] = None,
                  key: Optional[str] = None, type: Optional[str] = None,
                  headers: Optional[Mapping[str, str]] = None,
                  delay: float = 0.0,
                  columns: Optional[Mapping[str, Any]] = None,
                  context: Any = None) -> Enqueued:
    """enqueue_dedup_batch() of one message."""
    return enqueue_dedup_batch(conn, table, [Outgoing(
        body, id, key, type, headers, delay, columns or {}, dedup_key)],
        context=context)[0]


def enqueue(conn: Any, table: Union[str, Table], body: Any = None, *,
            id: Union[str, int, None] = None, key: Optional[str] = None,
            type: Optional[str] = None,
            headers: Optional[Mapping[str, str]] = None, delay: float = 0.0,
            columns: Optional[Mapping[str, Any]] = None,
            context: Any = None, dedup_key: Optional[str] = None) -> str:
    """enqueue_batch() of one message; returns its id."""
    return enqueue_batch(conn, table, [Outgoing(
        body, id, key, type, headers, delay, columns or {}, dedup_key)],
        context=context)[0]
