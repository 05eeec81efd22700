"""Tests of msgq.Client (the unary calls) against a private MariaDB and a
real msgqd ($MSGQD, else build/server/msgqd).

Run by ctest (msgq_python_client_test), or by hand:
  MSGQD=build/server/msgqd PYTHONPATH=build/client/python:client/python \
      /usr/bin/python3 -m unittest -v msgq_client_test
"""

from __future__ import annotations

import time
import unittest
from typing import Any, List, Tuple

import msgq
import msgq_inbox_testing as testing


def table_ddl(name: str, ack_wait: float = 30, text_id: bool = False) -> str:
    """A message table with last_error, time_dead and time_created."""
    return ("CREATE TABLE msgq.`%s` (id %s NOT NULL, "
            "priority tinyint NOT NULL DEFAULT 50, "
            "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
            "time_acked bigint DEFAULT NULL, message json, "
            "last_error varchar(255) DEFAULT NULL, "
            "time_dead bigint DEFAULT NULL, "
            "time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000),"
            " PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, "
            "time_next)) COMMENT 'vitess_message,vt_ack_wait=%s,"
            "vt_purge_after=86400,vt_batch_size=10,vt_cache_size=10000,"
            "vt_poller_interval=1'"
            % (name, "varchar(36)" if text_id else "bigint", ack_wait))


class Server:
    """One MariaDB and one msgqd for a test class."""

    def __init__(self) -> None:
        self.db = testing.MariaDB()
        try:
            self.db.sql("CREATE DATABASE msgq")
            self.msgqd = testing.Msgqd(self.db.socket, testing.free_port())
            self.msgqd.start()
        except BaseException:
            self.db.stop()
            raise
        self.address = self.msgqd.address

    def create(self, name: str, ids: List[str], **kwargs: Any) -> None:
        self.db.sql(table_ddl(name, **kwargs))
        for i in ids:
            self.db.sql("INSERT INTO msgq.`%s` (id, message) VALUES (%%s, %%s)"
                        % name, (i, '{"n": "%s"}' % i))
        self.wait_loaded(name)

    def wait_loaded(self, name: str, timeout: float = 20) -> None:
        """Until msgqd serves `name` (its schema reload is 200ms)."""
        deadline = time.monotonic() + timeout
        with msgq.Client(self.address) as client:
            while time.monotonic() < deadline:
                if any(t.table.name == name and t.loaded
                       for t in client.list_tables()):
                    return
                time.sleep(0.05)
        raise AssertionError("msgqd did not load table %s" % name)

    def rows(self, name: str) -> List[Tuple[str, ...]]:
        """(id, acked, epoch, due, last_error) of each row, as text."""
        return [tuple("-" if v is None else
                      v.decode() if isinstance(v, bytes) else str(v)
                      for v in row)
                for row in self.db.sql(
                    "SELECT id, time_acked IS NOT NULL, epoch, "
                    "time_next IS NOT NULL, last_error FROM msgq.`%s` "
                    "ORDER BY id" % name)]

    def stop(self) -> None:
        self.msgqd.stop()
        self.db.stop()


def peek(address: str, table: str, count: int) -> List[msgq.Message]:
    """`count` messages streamed and left unsettled (in flight)."""
    seen: List[msgq.Message] = []
    msgq.Subscriber(address, table, seen.append, ack=False,
                    tracing=False).run(count=count)
    return sorted(seen, key=lambda m: m.id)


class ClientTest(unittest.TestCase):
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def setUp(self) -> None:
        self.client = msgq.Client(self.server.address, keyspace="msgq")
        self.addCleanup(self.client.close)

    def test_ack_nack_extend_on_streamed_messages(self):
        self.server.create("t_settle", ["1", "2", "3"])
        m1, m2, m3 = peek(self.server.address, "t_settle", 3)
        self.assertEqual([m.delivery for m in (m1, m2, m3)],
                         [msgq.Delivery("1", 0), msgq.Delivery("2", 0),
                          msgq.Delivery("3", 0)])
        self.assertEqual(self.client.extend("t_settle", [m1, m2.delivery],
                                            60), 2)
        self.assertEqual(self.client.ack("t_settle", [m1.id]), 1)
        self.assertEqual(self.client.ack("t_settle", ["1"]), 0)  # already
        self.assertEqual(self.client.nack("t_settle", [m2], delay=3600,
                                          reason="later"),
                         msgq.Nacked(retried=1, dead=0))
        self.assertEqual(self.client.nack(msgq.Table("t_settle", "msgq"),
                                          [m3.delivery], dead=True,
                                          reason="poison"),
                         msgq.Nacked(retried=0, dead=1))
        self.assertEqual(self.server.rows("t_settle"),
                         [("1", "1", "1", "0", "-"),
                          ("2", "0", "1", "1", "later"),
                          ("3", "0", "1", "0", "poison")])

    def test_list_dead_and_redrive(self):
        self.server.create("t_dead", ["10", "11", "12"])
        messages = peek(self.server.address, "t_dead", 3)
        self.assertEqual(self.client.nack("t_dead", messages, dead=True,
                                          reason="bad"),
                         msgq.Nacked(retried=0, dead=3))
        dead = self.client.list_dead("t_dead")
        self.assertEqual([(d.id, d.epoch, d.last_error) for d in dead],
                         [("10", 1, "bad"), ("11", 1, "bad"),
                          ("12", 1, "bad")])
        for d in dead:
            self.assertIsNotNone(d.time_dead)
            self.assertIsNotNone(d.time_created)
            self.assertLessEqual(d.time_created, d.time_dead)
        page = self.client.list_dead("t_dead", limit=1, after_id="10")
        self.assertEqual([d.id for d in page], ["11"])
        self.assertEqual(self.client.redrive("t_dead", ["11"]), 1)
        self.assertEqual([d.id for d in self.client.list_dead("t_dead")],
                         ["10", "12"])
        self.assertEqual(self.client.redrive_all("t_dead"), 2)
        self.assertEqual(self.client.list_dead("t_dead"), [])
        self.assertEqual(self.server.rows("t_dead"),
                         [("10", "0", "0", "1", "bad"),
                          ("11", "0", "0", "1", "bad"),
                          ("12", "0", "0", "1", "bad")])

    def test_pause_resume_and_list_tables(self):
        self.server.create("t_pause", [], ack_wait=7.5)
        status = self.table_status("t_pause")
        self.assertEqual(status.table, msgq.Table("t_pause", "msgq"))
        self.assertTrue(status.loaded)
        self.assertEqual(status.load_error, "")
        self.assertFalse(status.paused)
        self.assertEqual(status.settings.ack_wait, 7.5)
        self.assertEqual(status.settings.batch_size, 10)
        self.assertEqual(status.settings.message_columns, ())
        self.client.pause("t_pause")
        self.assertTrue(self.table_status("t_pause").paused)
        self.client.resume("t_pause")
        self.assertFalse(self.table_status("t_pause").paused)

    def table_status(self, name: str) -> msgq.TableStatus:
        found = [t for t in self.client.list_tables() if t.table.name == name]
        self.assertEqual(len(found), 1)
        return found[0]

    def test_errors_are_the_package_types(self):
        with self.assertRaises(msgq.errors.UnknownTable) as e:
            self.client.ack("no_such_table", ["1"])
        self.assertEqual(e.exception.code().name, "NOT_FOUND")
        self.server.create("t_errors", [])
        with self.assertRaises(msgq.errors.InvalidArgument):
            self.client.ack("t_errors", ["abc"])  # an integer id
        with self.assertRaises(ValueError):
            self.client.extend("t_errors", [msgq.Delivery("1")], 0)
        with self.assertRaises(ValueError):
            self.client.list_dead("t_errors", limit=0)
        with self.assertRaises(TypeError):
            self.client.ack("t_errors", "1")
        with msgq.Client("127.0.0.1:%d" % testing.free_port(),
                         timeout=2) as down:
            with self.assertRaises(msgq.errors.Unavailable):
                down.list_tables()
        closed = msgq.Client(self.server.address)
        closed.close()
        with self.assertRaises(msgq.errors.ClosedError):
            closed.list_tables()


if __name__ == "__main__":
    unittest.main()
