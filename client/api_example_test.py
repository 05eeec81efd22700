"""The C++ consumer example of docs/api.md, built as written
(client/api_example.cmake puts it in msgq_api_example_consumer, its servers
read from $MSGQ_EXAMPLE_SERVER) and run against a private MariaDB and a real
msgqd: a permanent error (an unknown table) is printed and exits 1, and a
server that is down is retried with a line per retry.

Run by ctest (msgq_api_example_test), or by hand from client/:
  MSGQD=build/server/msgqd \\
  MSGQ_API_EXAMPLE=build/client/msgq_api_example_consumer \\
  PYTHONPATH=python /usr/bin/python3 -m unittest -v api_example_test
"""

from __future__ import annotations

import os
import unittest
from typing import Callable, Optional, Tuple

import msgq_inbox_testing as testing

EXAMPLE = os.environ.get("MSGQ_API_EXAMPLE") or os.path.join(
    testing.REPO, "build", "client", "msgq_api_example_consumer")


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


if __name__ == "__main__":
    unittest.main()
