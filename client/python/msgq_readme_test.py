"""The consumer example at the top of client/python/README.md, run as
written (its server and its application function filled in) against a
private MariaDB and a real msgqd ($MSGQD, else build/server/msgqd): a
permanent error (an unknown table) is printed and exits 1, and a server that
is down is retried with a line per retry.

Run by ctest (msgq_python_readme_test), or by hand:
  MSGQD=build/server/msgqd PYTHONPATH=build/client/python:client/python \\
      /usr/bin/python3 -m unittest -v msgq_readme_test
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import unittest
from typing import Callable, Optional, Tuple

import msgq_inbox_testing as testing

EXAMPLE_DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md")


def consumer_example(server: str) -> str:
    """The first python block of client/python/README.md, with its server set to `server`."""
    with open(EXAMPLE_DOC, encoding="utf-8") as f:
        text = f.read()
    start = text.index("```python\n") + len("```python\n")
    block = text[start:text.index("```", start)]
    code = block.replace('"db1:15999"', repr(server))
    assert code != block, "the example names the server db1:15999"
    return "async def process(body):\n    pass\n\n" + code


def run(code: str, until: Callable[[str], bool] = lambda _: False,
        timeout: float = 30) -> Tuple[Optional[int], str]:
    """Runs `code` with this Python; (exit code, stderr) when it exits, or
    (None, stderr) once `until(stderr)` holds or `timeout` passed (then it
    is killed)."""
    with tempfile.TemporaryDirectory(prefix="msgq-test-readme-") as d:
        path = os.path.join(d, "consumer.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        return testing.run_watching_stderr([sys.executable, path], until,
                                           timeout)


class ReadmeExampleTest(unittest.TestCase):

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
        code, stderr = run(consumer_example(self.msgqd.address))
        self.assertEqual(code, 1, stderr)
        self.assertEqual(stderr, "msgq: NOT_FOUND: message table `orders` "
                                 "not found in keyspaces msgq\n")

    def test_server_down_is_retried_a_line_per_retry(self) -> None:
        closed = "127.0.0.1:%d" % testing.free_port()
        start = time.monotonic()
        code, stderr = run(consumer_example(closed),
                           lambda err: err.count("\n") >= 3)
        self.assertIsNone(code, stderr)  # still running: killed by the test
        self.assertLess(time.monotonic() - start, 30, stderr)
        lines = stderr.splitlines()
        self.assertGreaterEqual(len(lines), 3, stderr)
        for line in lines:
            self.assertRegex(
                line, r"^msgq: UNAVAILABLE: .*; retrying in \d+\.\d s$")


if __name__ == "__main__":
    unittest.main()
