"""The Python client's conformance driver (client/conformance/README.md):

    python_driver.py --api aio|sync SERVER TABLE SCENARIO_JSON

runs the driver part of one scenario of client/conformance/scenarios.json
with msgq.aio.AsyncSubscriber (aio) or the blocking msgq.Subscriber (sync)
and prints one JSON line: the deliveries (id, epoch, seconds since the
first one), the handlers finished when close returned, the ids enqueued."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import msgq
import msgq.aio


class Record:
    """What the driver saw; shared by the handlers (thread-safe)."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.spec = spec
        self.lock = threading.Lock()
        self.deliveries: List[Dict[str, Any]] = []
        self.first: Optional[float] = None
        self.started = 0
        self.finished = 0
        self.seen: set = set()
        self.error: Optional[str] = None  # the kind that ended the run

    def begin(self, message: msgq.Message) -> bool:
        """Records the delivery; True when its id was seen before."""
        with self.lock:
            now = time.monotonic()
            if self.first is None:
                self.first = now
            self.deliveries.append({"id": message.id, "epoch": message.epoch,
                                    "t": round(now - self.first, 3)})
            self.started += 1
            again = message.id in self.seen
            self.seen.add(message.id)
            return again

    def end(self) -> None:
        with self.lock:
            self.finished += 1

    def outcome(self, again: bool) -> Any:
        kind = self.spec["handler"]
        if kind == "ack":
            return msgq.ack()
        if kind == "retry_once":
            return msgq.ack() if again else msgq.retry(
                self.spec["delay"], "conformance retry")
        if kind == "throw_once":
            if not again:
                raise RuntimeError("conformance error")
            return msgq.ack()
        if kind == "dead":
            return msgq.dead("conformance dead")
        if kind == "sleep_ack":
            return msgq.ack()
        raise ValueError("unknown handler %r" % kind)

    def should_stop(self) -> bool:
        with self.lock:
            if "stop_after" in self.spec:
                return self.finished >= self.spec["stop_after"]
            return self.started >= self.spec["close_when_started"]


def produce(spec: Dict[str, Any], table: str) -> Dict[str, str]:
    import MySQLdb
    ids = {}
    for name, commit in (("committed", True), ("rolled_back", False)):
        conn = MySQLdb.connect(unix_socket=spec["mysql_socket"], user="root",
                               db=spec["database"])
        try:
            ids[name] = msgq.enqueue(conn, table, {"conformance": name})
            if commit:
                conn.commit()
            else:
                conn.rollback()
        finally:
            conn.close()
    return ids


def error_kind(error: BaseException) -> str:
    """The error's kind, as scenarios.json names it."""
    kinds = ((msgq.errors.UnknownTable, "unknown_table"),
             (msgq.errors.Unauthenticated, "unauthenticated"),
             (msgq.errors.PermissionDenied, "permission_denied"),
             (msgq.errors.InvalidArgument, "invalid_argument"),
             (msgq.errors.Unavailable, "unavailable"))
    for cls, kind in kinds:
        if isinstance(error, cls):
            return kind
    return "other: %r" % error


async def run_aio(server: str, table: str, record: Record) -> None:
    spec = record.spec
    stop = asyncio.Event()

    async def handler(message: msgq.Message) -> Any:
        again = record.begin(message)
        if record.should_stop():
            stop.set()
        try:
            if spec["handler"] == "sleep_ack":
                await asyncio.sleep(spec["sleep"])
            return record.outcome(again)
        finally:
            record.end()
            if record.should_stop():
                stop.set()

    sub = msgq.aio.AsyncSubscriber(server, table, handler,
                                   concurrency=spec["concurrency"],
                                   tracing=False)
    running = asyncio.ensure_future(sub.run())
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({running, stopping}, timeout=spec["timeout"],
                                 return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not done:
        record.spec["timed_out"] = True
    sub.stop()
    try:
        await running
    except msgq.MsgqError as e:
        record.error = error_kind(e)


def run_sync(server: str, table: str, record: Record) -> None:
    spec = record.spec
    sub: msgq.Subscriber

    def handler(message: msgq.Message) -> Any:
        again = record.begin(message)
        if record.should_stop():
            sub.stop()
        try:
            if spec["handler"] == "sleep_ack":
                time.sleep(spec["sleep"])
            return record.outcome(again)
        finally:
            record.end()
            if record.should_stop():
                sub.stop()

    sub = msgq.Subscriber(server, table, handler,
                          concurrency=spec["concurrency"], tracing=False)

    def timed_out() -> None:
        record.spec["timed_out"] = True
        sub.stop()

    timer = threading.Timer(spec["timeout"], timed_out)
    timer.start()
    try:
        sub.run()
    except msgq.MsgqError as e:
        record.error = error_kind(e)
    finally:
        timer.cancel()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", choices=("aio", "sync"), required=True)
    parser.add_argument("server")
    parser.add_argument("table")
    parser.add_argument("spec")
    args = parser.parse_args()
    spec = json.loads(args.spec)
    out: Dict[str, Any] = {}
    if spec["mode"] == "produce":
        out["enqueued"] = produce(spec, args.table)
    record = Record(spec)
    if args.api == "aio":
        asyncio.run(run_aio(args.server, args.table, record))
    else:
        run_sync(args.server, args.table, record)
    with record.lock:
        out["deliveries"] = record.deliveries
        out["finished_before_close"] = record.finished
    if spec.get("timed_out"):
        out["timed_out"] = True
    if record.error is not None:
        out["error"] = record.error
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
