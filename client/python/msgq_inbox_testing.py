"""Test fixtures of the inbox tests (msgq_inbox_test.py): private MariaDB
servers (tools/mariadb-private), msgqd ($MSGQD, else build/server/msgqd),
and a consumer process (`python3 msgq_inbox_testing.py consumer ...`) that
moves money between two accounts of its own database for each message,
through msgq.Inbox.

The consumer writes one line per event to its --events file (appended,
flushed at once, so a kill -9 loses nothing written): "run ID" when the
work starts, "commit ID" after the commit, "dup ID" for a message found in
the inbox. --crash_after_commit=P SIGKILLs itself right after a commit
(before the ack) with probability P; --hold_file=F makes the work wait,
before the commit, until F exists; --leave_on_work closes its channel to
msgqd (ending its stream) when the work starts, so that the next send of
the message goes to another consumer, and exits after that one message.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("MSGQ_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
MSGQD = os.environ.get("MSGQD") or os.path.join(REPO, "build", "server", "msgqd")
MARIADB_PRIVATE = os.path.join(REPO, "tools", "mariadb-private")

ACCOUNTS_DDL = ("CREATE TABLE accounts (id int PRIMARY KEY, "
                "balance bigint NOT NULL)")
# One row per (message, application): more than one row for an id, or a
# count above 1, is a message applied twice.
APPLIED_DDL = ("CREATE TABLE applied (message_id bigint PRIMARY KEY, "
               "times int NOT NULL)")


def message_table_ddl(name: str, ack_wait: float, batch: int = 10,
                      db: str = "msgq", extra: str = "") -> str:
    comment = ("vitess_message,vt_ack_wait=%s,vt_purge_after=86400,"
               "vt_batch_size=%d,vt_cache_size=10000,vt_poller_interval=1%s"
               % (ack_wait, batch, extra))
    return ("CREATE TABLE `%s`.`%s` (id bigint NOT NULL, "
            "priority tinyint NOT NULL DEFAULT 50, "
            "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
            "time_acked bigint DEFAULT NULL, message json, "
            "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, "
            "time_next)) COMMENT '%s'" % (db, name, comment))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MariaDB:
    """A private MariaDB in a temporary directory, tied to this process
    (tools/mariadb-private --owner-pid)."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="msgq-inbox-db-")
        try:
            out = subprocess.run(
                [MARIADB_PRIVATE, "start", self.dir,
                 "--owner-pid=%d" % os.getpid()],
                check=True, capture_output=True, text=True, timeout=120).stdout
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.socket = re.search(r"MSGQ_MYSQL_SOCKET=(\S+)", out).group(1)

    def connect(self, db: Optional[str] = None, user: str = "root",
                password: str = ""):
        import MySQLdb
        kwargs = dict(unix_socket=self.socket, user=user, passwd=password)
        if db:
            kwargs["db"] = db
        return MySQLdb.connect(**kwargs)

    def sql(self, statement: str, args=None, db: Optional[str] = None):
        conn = self.connect(db)
        try:
            cur = conn.cursor()
            cur.execute(statement, args)
            rows = cur.fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()

    def stop(self) -> None:
        subprocess.run([MARIADB_PRIVATE, "stop", self.dir, "--kill"],
                       capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


class Msgqd:
    """msgqd on a fixed port (so a restart keeps the address) over the
    MariaDB at `socket`, serving database msgq."""

    def __init__(self, socket_path: str, port: int) -> None:
        self.socket_path, self.port = socket_path, port
        self.address = "127.0.0.1:%d" % port
        self.proc: Optional[subprocess.Popen] = None
        self.log = tempfile.TemporaryFile()

    def start(self, timeout: float = 30) -> None:
        if not os.path.exists(MSGQD):
            raise RuntimeError("no msgqd at %s (set MSGQD)" % MSGQD)
        self.log.seek(0)
        self.log.truncate()
        self.proc = subprocess.Popen(
            [MSGQD, "--mysql_socket=" + self.socket_path,
             "--listen=" + self.address, "--mysql_protocol_listen=",
             "--http_listen=", "--schema_reload_interval=200ms",
             "--databases=msgq"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            self.log.seek(0)
            if b"msgqd listening on " in self.log.read():
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                self.log.seek(0)
                raise RuntimeError("msgqd did not start:\n%s" %
                                   self.log.read()[-3000:].decode(errors="replace"))
            time.sleep(0.02)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        """kill(), and the log is closed (for the test's cleanup)."""
        self.kill()
        self.log.close()


class Consumer:
    """A consumer process (main() below)."""

    def __init__(self, msgqd: str, table: str, db_socket: str, events: str,
                 crash_after_commit: float = 0.0,
                 hold_file: Optional[str] = None, seed: int = 0,
                 work_delay: float = 0.0, leave_on_work: bool = False
                 ) -> None:
        argv = [sys.executable, os.path.abspath(__file__), "consumer",
                "--msgqd=" + msgqd, "--table=" + table,
                "--db_socket=" + db_socket, "--events=" + events,
                "--crash_after_commit=%s" % crash_after_commit,
                "--seed=%d" % seed, "--work_delay=%s" % work_delay]
        if hold_file:
            argv.append("--hold_file=" + hold_file)
        if leave_on_work:
            argv.append("--leave_on_work")
        # Its stderr goes to EVENTS.log, for a failing test to show.
        with open(events + ".log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                         stderr=log)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def run_watching_stderr(argv: List[str],
                        until: Callable[[str], bool] = lambda _: False,
                        timeout: float = 30,
                        env: Optional[Dict[str, str]] = None
                        ) -> Tuple[Optional[int], str]:
    """Runs `argv`; (exit code, stderr) when it exits, or (None, stderr)
    once `until(stderr so far)` holds or `timeout` passed (then it is
    killed)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stderr is not None
    lines: List[str] = []
    matched, done = threading.Event(), threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if until("".join(lines)):
                matched.set()
                break
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done.wait(timeout)
    killed = matched.is_set() or not done.is_set()
    if killed:
        proc.kill()
    code = proc.wait(10)
    reader.join(5)
    proc.stderr.close()
    return (None if killed else code), "".join(lines)


def read_events(path: str) -> List[List[str]]:
    try:
        with open(path) as f:
            return [line.split() for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


def setup_bank(db: MariaDB, opening: int) -> None:
    db.sql("CREATE DATABASE bank")
    db.sql(ACCOUNTS_DDL, db="bank")
    db.sql(APPLIED_DDL, db="bank")
    db.sql("INSERT INTO accounts VALUES (1, %s), (2, 0)", (opening,),
           db="bank")


def transfer(message, cursor) -> None:
    """The consumer's work: moves `amount` from account `from` to `to`."""
    t = json.loads(message.get("message"))
    cursor.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s",
                   (t["amount"], t["from"]))
    cursor.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s",
                   (t["amount"], t["to"]))
    cursor.execute("INSERT INTO applied VALUES (%s, 1) "
                   "ON DUPLICATE KEY UPDATE times = times + 1",
                   (int(message.id),))


def main(argv: List[str]) -> int:
    import grpc
    import MySQLdb
    import msgq
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["consumer"])
    p.add_argument("--msgqd", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--db_socket", required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--crash_after_commit", type=float, default=0.0)
    p.add_argument("--hold_file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work_delay", type=float, default=0.0)
    p.add_argument("--leave_on_work", action="store_true")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    events = open(args.events, "a", buffering=1)

    def log(what: str, message) -> None:
        events.write("%s %s\n" % (what, message.id))
        events.flush()

    def work(message, cursor):
        log("run", message)
        transfer(message, cursor)
        if args.work_delay:
            time.sleep(rng.uniform(0, args.work_delay))
        while args.hold_file and not os.path.exists(args.hold_file):
            time.sleep(0.01)
        return msgq.ack()

    def committed(message) -> None:
        log("commit", message)
        if rng.random() < args.crash_after_commit:
            os.kill(os.getpid(), signal.SIGKILL)  # between commit and ack

    inbox = msgq.Inbox(
        connect=lambda: MySQLdb.connect(unix_socket=args.db_socket,
                                        user="root", db="bank"),
        source="test", on_committed=committed,
        on_duplicate=lambda m: log("dup", m))
    if not args.leave_on_work:
        msgq.Subscriber(args.msgqd, args.table,
                        inbox.handler(args.table, work, keyspace="msgq"),
                        keyspace="msgq", tracing=False).run()
        return 0
    # Leaves msgqd (closes its channel, ending the stream) as soon as the
    # work starts, so the message's next send goes to another consumer;
    # the work then holds and commits, and its ack cannot go out.
    channel = msgq.make_channel(args.msgqd)

    def leave_then_work(message, cursor):
        channel.close()
        return work(message, cursor)
    try:
        msgq.consume(channel, args.table,
                     inbox.handler(args.table, leave_then_work,
                                   keyspace="msgq"),
                     keyspace="msgq", tracing=False, count=1)
    except (ValueError, grpc.RpcError) as e:  # the ack on the closed channel
        print("consumer: %r" % e, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
