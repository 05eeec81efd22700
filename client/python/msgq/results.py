"""What a handler returns: ack(), retry(delay, reason) or dead(reason).

A handler decides each message's fate by its return value:
- `msgq.ack()`: done, acknowledge it. Returning None (a handler that
  returns nothing) or True is an ack too.
- `msgq.retry(delay=None, reason="")`: not done, send it again after `delay`
  seconds (None = the table's backoff for the message's epoch; 0 or less =
  as soon as possible). False is `retry()`.
- `msgq.dead(reason)`: never going to work, dead now.
An exception raised by the handler is a retry with the table's backoff and
the exception's text as the reason (thrown()); so is a return value that is
none of these (its reason says what it was). The same outcomes as the C++,
Node and Go clients. The values are frozen dataclasses: immutable,
comparable and thread-safe.

`msgq.ack` without the call (the function itself) still acks, with a
DeprecationWarning; it goes away in the next release.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable, Optional, Tuple, Union


@dataclass(frozen=True)
class Ack:
    """Handler result: done, acknowledge it."""


_ACK = Ack()

# (delay, reason, dead): one MessageNack per distinct key.
NackKey = Tuple[Optional[float], str, bool]


@dataclass(frozen=True)
class Retry:
    """Handler result: not done, send it again after `delay` seconds (None =
    the table's backoff for its epoch; a negative delay is stored as 0, as
    soon as possible). Raises ValueError for a NaN or infinite delay,
    TypeError for one that is not a number."""

    delay: Optional[float] = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.delay is not None:
            try:
                seconds = float(self.delay)
            except (TypeError, ValueError):
                raise TypeError("retry delay must be a number of seconds, "
                                "got %r" % (self.delay,)) from None
            if not math.isfinite(seconds):
                raise ValueError("retry delay must be finite, got %r"
                                 % (self.delay,))
            object.__setattr__(self, "delay", max(seconds, 0.0))
        object.__setattr__(self, "reason", str(self.reason))

    def key(self) -> NackKey:
        return (self.delay, self.reason, False)


@dataclass(frozen=True)
class Dead:
    """Handler result: never going to work, dead now; `reason` goes to the
    row's last_error if it has one."""

    reason: str = ""

    def key(self) -> NackKey:
        return (None, self.reason, True)


Outcome = Union[Ack, Retry, Dead]
# What a handler may return: a result, None or True (ack), False (retry()).
# Callable covers the deprecated bare `msgq.ack`.
HandlerResult = Union[Ack, Retry, Dead, bool, None, Callable[[], Ack]]


def ack() -> Ack:
    """Done: acknowledge the message."""
    return _ACK


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


def outcome(result: object) -> Outcome:
    """The Ack/Retry/Dead a handler's return value stands for: None and
    True are ack(), False is retry(). Raises TypeError for anything else
    (the subscribers turn that into a retry with the table's backoff, as an
    exception)."""
    if isinstance(result, (Ack, Retry, Dead)):
        return result
    if result is None or result is True:
        return _ACK
    if result is False:
        return Retry()
    if result is ack:
        warnings.warn("return msgq.ack() (a call), not msgq.ack",
                      DeprecationWarning, stacklevel=3)
        return _ACK
    raise TypeError("handler returned %r; expected ack(), retry(...), "
                    "dead(...), None, True or False" % (result,))
