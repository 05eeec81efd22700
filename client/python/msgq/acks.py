"""AckBatcher: the acks of one server, batched (client/SPEC.md#ack-batching),
for the blocking Subscriber.

    acks = AckBatcher(send)          # send(ids) makes one MessageAck
    acks.start()
    acks.add(message.raw_id)         # from any handler thread
    acks.close()                     # sends what is pending, then returns

A batch goes out when it holds `max_batch` ids, or `max_delay` seconds
after its oldest id was added, whichever comes first; close() sends what is
left. A send that fails with UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED or
RESOURCE_EXHAUSTED is made again, `max_attempts` in all; any other failure
drops the batch. A dropped batch is reported to `on_error` (the ids are not
lost for good: the server sends unacked messages again after the ack wait).

Thread-safety: thread-safe. Sends run on the batcher's own thread, never
under its lock.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, List, Optional, Tuple

import grpc

from msgq.errors import from_rpc

# The failures a batch is sent again after.
RETRYABLE_ACK = frozenset({
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
})


class AckBatcher:
    """Batches ids into `send(ids)` calls (see the module docstring).
    `send` raises grpc.RpcError (or a msgq.errors.ServerError) on failure;
    `on_error(error)` is told of each batch dropped."""

    def __init__(self, send: Callable[[List[bytes]], None], *,
                 max_batch: int = 100, max_delay: float = 0.05,
                 max_attempts: int = 3,
                 on_error: Optional[Callable[[BaseException], None]] = None
                 ) -> None:
        if max_batch < 1 or max_delay < 0 or max_attempts < 1:
            raise ValueError("max_batch >= 1, max_delay >= 0, "
                             "max_attempts >= 1")
        self._send, self._on_error = send, on_error
        self.max_batch, self.max_delay = max_batch, max_delay
        self.max_attempts = max_attempts
        self._cond = threading.Condition()
        # Pending ids, oldest first, with when each was added.
        self._pending: List[Tuple[bytes, float]] = []
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    def add(self, id_: bytes) -> bool:
        """Queues `id_` for the next batch; False once closed (not sent)."""
        with self._cond:
            if self._closed:
                return False
            self._pending.append((id_, time.monotonic()))
            if len(self._pending) == 1 or \
                    len(self._pending) >= self.max_batch:
                self._cond.notify_all()
            return True

    def start(self) -> None:
        """Starts the sending thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True,
                                            name="msgq-acks")
            self._thread.start()

    def close(self) -> None:
        """Refuses new ids, sends the pending ones and stops the thread;
        returns once they were sent (or dropped). Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        else:
            self._flush_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    if self._pending:
                        left = self._pending[0][1] + self.max_delay - \
                            time.monotonic()
                        if len(self._pending) >= self.max_batch or left <= 0:
                            break
                        self._cond.wait(left)
                    else:
                        self._cond.wait()
                if self._closed:
                    break
                batch = self._take_locked()
            self._send_batch(batch)
        self._flush_all()

    def _take_locked(self) -> List[bytes]:
        batch = [id_ for id_, _ in self._pending[:self.max_batch]]
        del self._pending[:self.max_batch]
        return batch

    def _flush_all(self) -> None:
        while True:
            with self._cond:
                if not self._pending:
                    return
                batch = self._take_locked()
            self._send_batch(batch)

    def _send_batch(self, ids: List[bytes]) -> None:
        for attempt in range(1, self.max_attempts + 1):
            try:
                self._send(ids)
                return
            except Exception as e:  # reported below; never fatal
                error: BaseException = e
                again = False
                if isinstance(e, grpc.RpcError):
                    error = from_rpc(e)
                    again = error.code() in RETRYABLE_ACK
                if attempt == self.max_attempts or not again:
                    if self._on_error is not None:
                        self._on_error(error)
                    return
