"""Heartbeat: keeps the deliveries of running handlers from timing out
(client/SPEC.md#heartbeats), for the blocking Subscriber, one per server.

    beat = Heartbeat(extend, ack_wait=None)   # ack wait learnt later
    beat.start()
    beat.set_ack_wait(30.0)                   # from ListTables
    ticket = beat.begin(delivery, received)   # the handler starts
    ...                                       # extends go out meanwhile
    beat.end(ticket)                          # the handler returned
    beat.close()

For a delivery received at R (time.monotonic()) on a table with ack wait
W, an extend is due at R + fraction x W, then fraction x W after each
extend or failed try; each asks for min(W, R + W + max_extension - now),
one `extend(delivery, seconds)` call per delivery, so the delivery is never
held past R + W + max_extension. `extend` returns the number of rows the
server extended: 0 means the delivery was lost (sent again or settled), and
it is never extended again. An exception from `extend` is reported to
`on_error` and tried again at the next interval. Until the ack wait is
known nothing is extended; a negative `max_extension` turns the heartbeat
off (begin() then registers nothing).

Thread-safety: thread-safe. Extends run on the heartbeat's own thread (or
the caller's, for tick()), never under its lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

# extend(delivery, seconds) -> rows extended; raises on a failed call.
Extend = Callable[[Any, float], int]


@dataclass
class _Entry:
    delivery: Any  # msgq.v1 Delivery
    received: float
    last_try: float
    in_flight: bool = False
    exhausted: bool = False  # held as long as max_extension allows


class Heartbeat:
    """Extends registered deliveries (see the module docstring). `fraction`
    is clamped to [0.05, 1]; `ack_wait` None or <= 0 = not known yet; `now`
    is the monotonic clock (injected by tests)."""

    def __init__(self, extend: Extend, *, fraction: float = 0.5,
                 max_extension: float = 600.0,
                 ack_wait: Optional[float] = None,
                 on_error: Optional[Callable[[BaseException], None]] = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self._extend, self._on_error, self._now = extend, on_error, now
        self.fraction = min(max(fraction, 0.05), 1.0)
        self.max_extension = max_extension
        self.enabled = max_extension >= 0
        self._cond = threading.Condition()
        self._ack_wait = ack_wait if ack_wait and ack_wait > 0 else None
        self._entries: Dict[int, _Entry] = {}
        self._next_ticket = 1
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._extended = self._lost = self._errors = 0

    @property
    def extended(self) -> int:
        """Extends the server applied."""
        with self._cond:
            return self._extended

    @property
    def lost(self) -> int:
        """Extends that found the delivery gone (never extended again)."""
        with self._cond:
            return self._lost

    @property
    def errors(self) -> int:
        """Extends that failed (tried again at the next interval)."""
        with self._cond:
            return self._errors

    def set_ack_wait(self, seconds: Optional[float]) -> None:
        """The table's ack wait; None or <= 0 = unknown (nothing extended)."""
        with self._cond:
            self._ack_wait = seconds if seconds and seconds > 0 else None
            self._cond.notify_all()

    def begin(self, delivery: Any, received: float) -> int:
        """Registers `delivery`, received at `received` (monotonic); returns
        the ticket for end() (0 when the heartbeat is off)."""
        if not self.enabled:
            return 0
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._entries[ticket] = _Entry(delivery, received, received)
            self._cond.notify_all()
            return ticket

    def end(self, ticket: int) -> None:
        """Stops extending the delivery of `ticket` (0: nothing)."""
        if ticket:
            with self._cond:
                self._entries.pop(ticket, None)

    def next_due(self) -> Optional[float]:
        """When the next extend is due (monotonic), None when none can be."""
        with self._cond:
            return self._next_due_locked()

    def _next_due_locked(self) -> Optional[float]:
        if self._ack_wait is None:
            return None
        interval = self.fraction * self._ack_wait
        cap = self._ack_wait + self.max_extension
        due: Optional[float] = None
        for e in self._entries.values():
            at = e.last_try + interval
            # Past the cap nothing is asked for: the entry waits for end().
            if e.in_flight or e.exhausted or at >= e.received + cap:
                continue
            if due is None or at < due:
                due = at
        return due

    def tick(self) -> None:
        """Sends every extend due now and waits for the answers."""
        now = self._now()
        due: List[Tuple[int, Any, float]] = []
        with self._cond:
            if self._ack_wait is None:
                return
            ack_wait = self._ack_wait
            interval = self.fraction * ack_wait
            for ticket, e in self._entries.items():
                if e.in_flight or e.exhausted or now < e.last_try + interval:
                    continue
                left = e.received + ack_wait + self.max_extension - now
                if left <= 0:
                    e.exhausted = True
                    continue
                e.in_flight = True
                due.append((ticket, e.delivery, min(ack_wait, left)))
        for ticket, delivery, seconds in due:
            error: Optional[BaseException] = None
            extended = 0
            try:
                extended = self._extend(delivery, seconds)
            except Exception as e:  # reported; tried again next interval
                error = e
            with self._cond:
                if error is not None:
                    self._errors += 1
                elif extended == 0:
                    self._lost += 1
                else:
                    self._extended += 1
                entry = self._entries.get(ticket)
                if entry is not None:
                    if error is None and extended == 0:
                        del self._entries[ticket]  # lost: never again
                    else:
                        entry.in_flight = False
                        entry.last_try = now
                closed = self._closed
            if error is not None and self._on_error is not None \
                    and not closed:
                self._on_error(error)

    def start(self) -> None:
        """Starts the thread that sends the extends when due (not when the
        heartbeat is off, nor twice)."""
        if not self.enabled or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="msgq-heartbeat")
        self._thread.start()

    def close(self) -> None:
        """Stops the thread; waits for an extend under way (each has the
        caller's deadline). Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                due = self._next_due_locked()
                wait = None if due is None else due - self._now()
                if wait is None or wait > 0:
                    # Woken by begin(), set_ack_wait() and close().
                    self._cond.wait(wait)
                    continue
            self.tick()
