"""Capped exponential backoff with multiplicative jitter (reconnects).

Not thread-safe: each consuming thread has its own Backoff.
"""

from __future__ import annotations

import random
from typing import Optional


class Backoff:
    """Delays of initial * multiplier**attempt, capped at `maximum`, each
    multiplied by a random factor in [1 - jitter, 1 + jitter] (and capped
    again). Defaults: 100ms doubling to 5s, +-20%."""

    def __init__(self, initial: float = 0.1, multiplier: float = 2.0,
                 maximum: float = 5.0, jitter: float = 0.2,
                 rng: Optional[random.Random] = None) -> None:
        self.initial, self.multiplier = initial, multiplier
        self.maximum, self.jitter = maximum, jitter
        self.rng = rng or random.Random()
        self.attempt = 0

    def next(self) -> float:
        """The next delay in seconds."""
        nominal = min(self.maximum,
                      self.initial * self.multiplier ** self.attempt)
        if nominal < self.maximum:
            self.attempt += 1
        factor = 1 + self.rng.uniform(-self.jitter, self.jitter)
        return min(self.maximum, nominal * factor)

    def reset(self) -> None:
        """Back to the first delay (after a successful connection)."""
        self.attempt = 0
