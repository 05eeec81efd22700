"""The C++ examples of docs/api.md, built as written (client/api_example.cmake
puts them in msgq_api_example_consumer, its servers read from
$MSGQ_EXAMPLE_SERVER, and msgq_api_example_producer, connecting to the
MariaDB at $MSGQ_EXAMPLE_SOCKET) and run against a private MariaDB and a real
msgqd: the consumer prints a permanent error (an unknown table) and exits 1,
and retries a server that is down with a line per retry; the producer
commits its order together with its message, or neither.

Run by ctest (msgq_api_example_test), or by hand from client/:
  MSGQD=build/server/msgqd \\
  MSGQ_API_EXAMPLE=build/client/msgq_api_example_consumer \\
  MSGQ_API_EXAMPLE_PRODUCER=build/client/msgq_api_example_producer \\
  PYTHONPATH=python /usr/bin/python3 -m unittest -v api_example_test
"""

from __future__ import annotations

import os
import subprocess
import unittest
from typing import Callable, Optional, Tuple

import msgq_inbox_testing as testing

EXAMPLE = os.environ.get("MSGQ_API_EXAMPLE") or os.path.join(
    testing.REPO, "build", "client", "msgq_api_example_consumer")
PRODUCER = os.environ.get("MSGQ_API_EXAMPLE_PRODUCER") or os.path.join(
    testing.REPO, "build", "client", "msgq_api_example_producer")
UUIDV7 = "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
# The order_events table the producer example writes: every column
# msgq::Enqueue fills.
ORDER_EVENTS_DDL = (
    "CREATE TABLE shop.order_events (id varchar(36) NOT NULL, "
    "priority tinyint NOT NULL DEFAULT 50, epoch bigint NOT NULL DEFAULT 0, "
    "time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, "
    "message json, message_key varchar(255), message_type varchar(255), "
    "headers json, traceparent varchar(55), tracestate varchar(512), "
    "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) "
    "COMMENT 'vitess_message,vt_ack_wait=30'")


def run(server: str, until: Callable[[str], bool] = lambda _: False,
        timeout: float = 30) -> Tuple[Optional[int], str]:
    """Runs the example against `server`; (exit code, stderr) when it exits,
    or (None, stderr) once `until(stderr)` holds or `timeout` passed (then
    it is killed)."""
    return testing.run_watching_stderr(
        [EXAMPLE], until, timeout,
        env=dict(os.environ, MSGQ_EXAMPLE_SERVER=server))


class ApiExampleTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls) -> None:
        cls.db = testing.MariaDB()
        try:
            cls.db.sql("CREATE DATABASE msgq")
            cls.msgqd = testing.Msgqd(cls.db.socket, testing.free_port())
            cls.msgqd.start()
        except BaseException:
            cls.db.stop()
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        cls.msgqd.stop()
        cls.db.stop()

    def test_unknown_table_is_printed_and_exits_1(self) -> None:
        code, stderr = run(self.msgqd.address)
        self.assertEqual(code, 1, stderr)
        self.assertEqual(stderr, "msgq: NOT_FOUND: message table `orders` "
                                 "not found in keyspaces msgq\n")

    def test_server_down_is_retried_a_line_per_retry(self) -> None:
        closed = "127.0.0.1:%d" % testing.free_port()
        code, stderr = run(closed, lambda err: err.count("\n") >= 3)
        self.assertIsNone(code, stderr)  # still running: killed by the test
        lines = stderr.splitlines()
        self.assertGreaterEqual(len(lines), 3, stderr)
        for line in lines:
            self.assertRegex(
                line, r"^msgq: UNAVAILABLE: .*; retrying in \d+\.\d s$")

    def produce(self, events_table: bool) -> subprocess.CompletedProcess:
        self.db.sql("DROP DATABASE IF EXISTS shop")
        self.db.sql("CREATE DATABASE shop")
        self.db.sql("CREATE TABLE shop.orders (id int PRIMARY KEY, "
                    "total int NOT NULL)")
        if events_table:
            self.db.sql(ORDER_EVENTS_DDL)
        return subprocess.run(
            [PRODUCER], capture_output=True, text=True, timeout=60,
            env=dict(os.environ, MSGQ_EXAMPLE_SOCKET=self.db.socket))

    def test_producer_commits_the_order_with_its_message(self) -> None:
        now_ns = ("SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 "
                  "AS SIGNED)")
        before = self.db.sql(now_ns)[0][0]
        done = self.produce(events_table=True)
        after = self.db.sql(now_ns)[0][0]
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "")
        self.assertRegex(done.stdout, "^enqueued %s\n$" % UUIDV7)
        msg_id = done.stdout.split()[1]
        self.assertEqual(self.db.sql("SELECT id, total FROM shop.orders"),
                         ((42, 990),))
        rows = self.db.sql(
            "SELECT id, message, message_key, message_type, headers, "
            "traceparent, tracestate, time_next FROM shop.order_events")
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(rows[0][:7], (
            msg_id, '{"order": 42, "total": 990}', "customer-7",
            "order.placed", '{"source":"web"}',
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", None))
        self.assertGreaterEqual(rows[0][7], before + 10 * 10**9)
        self.assertLessEqual(rows[0][7], after + 10 * 10**9)

    def test_producer_error_commits_neither(self) -> None:
        done = self.produce(events_table=False)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(done.stdout, "")
        self.assertEqual(done.stderr,
                         "msgq: NOT_FOUND: MySQL error 1146: Table "
                         "'shop.order_events' doesn't exist\n")
        self.assertEqual(self.db.sql("SELECT COUNT(*) FROM shop.orders"),
                         ((0,),))


if __name__ == "__main__":
    unittest.main()
