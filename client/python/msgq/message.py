"""Message: one streamed row, decoded from msgq.v1's packed Row.

`message.id` and `message.get(name)` are str (MySQL's text form, UTF-8;
bytes that are not UTF-8 are read as Latin-1), `message.raw(name)` and
`message.raw_id` the bytes as streamed; NULL is None. `trace_context` is the producer's parsed `traceparent`/`tracestate` columns
(msgq.trace). A Message is not modified after it is built; reading it from
several threads is safe.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Dict, List, Optional, Sequence, Tuple

from msgq.errors import ProtocolError
from msgq.trace import TraceContext, parse_traceparent
from msgq.types import Delivery, user_id
from msgq.v1 import messaging_pb2

NUMERIC_TYPES = {"tinyint", "smallint", "mediumint", "int", "integer",
                 "bigint", "decimal", "numeric", "float", "double"}
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _latin1_fallback(error: UnicodeError) -> Tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    bad = error.object[error.start:error.end]
    return "".join(chr(b) for b in bad), error.end


codecs.register_error("msgq-latin1", _latin1_fallback)


class Message:
    """One decoded row: `values` are bytes (text-protocol form) or None
    (NULL); get() and id read them as str."""

    def __init__(self, fields: Sequence[messaging_pb2.Field],
                 values: List[Optional[bytes]], epoch: int = 0,
                 server: str = "") -> None:
        self.fields = fields          # list of msgq.v1.Field
        self.values = values          # list of bytes or None
        self.epoch = epoch            # sends before this delivery (Row.epoch)
        # The server it came from; its ack or nack goes there only.
        self.server = server
        self._index: Dict[str, int] = {}
        for i, field in enumerate(fields):
            self._index.setdefault(field.name, i)
        # The producer's W3C Trace Context (see msgq.trace): None when the
        # table has no traceparent column, it is NULL or not valid.
        self.trace_context: Optional[TraceContext] = None
        tp = self._index.get("traceparent")
        if tp is not None and tp < len(values) and values[tp] is not None:
            ts = self._index.get("tracestate")
            self.trace_context = parse_traceparent(
                values[tp], values[ts] if ts is not None and ts < len(values)
                else None)

    @property
    def id(self) -> str:
        """The id (column 0) as text: "42" for an integer id, the UUID for a
        char(36) one. Client calls take it as it is."""
        return text(self.raw_id)

    @property
    def raw_id(self) -> bytes:
        """The id as streamed in column 0, as MessageAck takes it."""
        value = self.values[0]
        assert value is not None  # decode_row refuses a NULL id
        return value

    @property
    def delivery(self) -> Delivery:
        """This delivery as Client.nack and Client.extend take it."""
        return Delivery(user_id(self.raw_id), self.epoch)

    def has(self, name: str) -> bool:
        return name in self._index

    def get(self, name: str) -> Optional[str]:
        """The column's text form; None when NULL. KeyError if no such
        column."""
        value = self.values[self._index[name]]
        return None if value is None else text(value)

    def raw(self, name: str) -> Optional[bytes]:
        """The column's bytes as streamed; None when NULL. KeyError if no
        such column."""
        return self.values[self._index[name]]

    def __repr__(self) -> str:
        return "Message(id=%r, epoch=%d, server=%r)" % (
            self.id, self.epoch, self.server)

    def to_json(self) -> str:
        """One JSON object, as `msgq tail --json` prints it: numeric columns
        as numbers, NULL as null, bytes that are not UTF-8 as Latin-1."""
        parts = []
        for field, value in zip(self.fields, self.values):
            if value is None:
                rendered = "null"
            else:
                value_text = text(value)
                if (field.type in NUMERIC_TYPES
                        and _JSON_NUMBER.fullmatch(value_text)):
                    rendered = value_text
                else:
                    rendered = json.dumps(value_text, ensure_ascii=False)
            parts.append(json.dumps(field.name, ensure_ascii=False) + ":" +
                         rendered)
        return "{" + ",".join(parts) + "}"


def text(value: bytes) -> str:
    """`value` as UTF-8, with bytes that are not UTF-8 read as Latin-1."""
    return value.decode("utf-8", errors="msgq-latin1")


def decode_row(fields: Sequence[messaging_pb2.Field],
               row: messaging_pb2.Row) -> List[Optional[bytes]]:
    """Splits a packed msgq.v1.Row into one bytes-or-None value per field.
    Raises ProtocolError when the row is malformed."""
    if len(row.lengths) != len(fields):
        raise ProtocolError("malformed row: %d lengths for %d columns" %
                            (len(row.lengths), len(fields)))
    values: List[Optional[bytes]] = []
    offset = 0
    for i, length in enumerate(row.lengths):
        if length < -1:
            raise ProtocolError("malformed row: column %d has length %d" %
                                (i, length))
        if length == -1:
            values.append(None)
            continue
        if offset + length > len(row.values):
            raise ProtocolError("malformed row: column %d overruns the values" % i)
        values.append(row.values[offset:offset + length])
        offset += length
    if offset != len(row.values):
        raise ProtocolError("malformed row: lengths add up to %d, values has %d"
                            % (offset, len(row.values)))
    if values[0] is None:
        raise ProtocolError("malformed row: the id (column 0) is NULL")
    return values
