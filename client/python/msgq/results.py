"""What a handler returns: ack, retry(delay, reason) or dead(reason).

A handler decides each message's fate by its return value: `ack` (or None or
True), `retry(delay=None, reason="")` (delay in seconds; None = the table's
backoff for the message's epoch; 0 = as soon as possible; a negative delay
counts as 0), `dead(reason)` (never going to work), or False (= a retry with
the table's backoff). An exception raised by the handler is a retry with the
table's backoff and the exception's text as the reason (thrown()); so is a
return value that is none of these (its reason says what it was). The same
outcomes as the C++, Node and Go clients. The values are immutable and
thread-safe.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple, Union


class Ack:
    """Handler result: done, acknowledge it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ack)

    def __hash__(self) -> int:
        return hash(Ack)

    def __repr__(self) -> str:
        return "ack"


ack = Ack()

# (delay, reason, dead): one MessageNack per distinct key.
NackKey = Tuple[Optional[float], str, bool]


class Retry:
    """Handler result: not done, send it again after `delay` seconds (None =
    the table's backoff for its epoch; 0 or less = as soon as possible).
    Raises ValueError for a NaN or infinite delay, TypeError for one that is
    not a number."""

    def __init__(self, delay: Optional[float] = None, reason: str = "") -> None:
        if delay is not None:
            try:
                seconds = float(delay)
            except (TypeError, ValueError):
                raise TypeError("retry delay must be a number of seconds, "
                                "got %r" % (delay,)) from None
            if not math.isfinite(seconds):
                raise ValueError("retry delay must be finite, got %r" % delay)
            # A negative delay means "now", as in the C++, Node and Go clients.
            if seconds < 0:
                delay = 0.0
        self.delay, self.reason = delay, str(reason)

    def key(self) -> NackKey:
        return (self.delay, self.reason, False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Retry) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return "retry(delay=%r, reason=%r)" % (self.delay, self.reason)


class Dead:
    """Handler result: never going to work, dead now."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    def key(self) -> NackKey:
        return (None, self.reason, True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dead) and self.reason == other.reason

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return "dead(reason=%r)" % self.reason


Outcome = Union[Ack, Retry, Dead]
# What a handler may return.
HandlerResult = Union[Ack, Retry, Dead, bool, None]


def retry(delay: Optional[float] = None, reason: str = "") -> Retry:
    """Retry after `delay` seconds (None = the table's backoff)."""
    return Retry(delay, reason)


def dead(reason: str = "") -> Dead:
    """Dead now, with `reason` stored in the row's last_error if it has one."""
    return Dead(reason)


def thrown(error: BaseException) -> Retry:
    """The outcome of a handler that raised `error`: a retry with the table's
    backoff and the error's text (else its repr) as the reason."""
    return Retry(reason=str(error) or repr(error))


def outcome(result: HandlerResult) -> Outcome:
    """The Ack/Retry/Dead a handler's return value stands for. Raises
    TypeError for anything else (consume() turns that into a retry with the
    table's backoff, as an exception)."""
    if result is None or result is True:
        return ack
    if result is False:
        return Retry()
    if isinstance(result, (Ack, Retry, Dead)):
        return result
    raise TypeError("handler returned %r; expected ack, retry(...), dead(...),"
                    " True, False or None" % (result,))
