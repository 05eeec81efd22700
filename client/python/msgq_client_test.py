"""Tests of msgq.Client (the unary calls), the subscribers (msgq.Subscriber
and msgq.aio.AsyncSubscriber: handler concurrency, heartbeats, the drain;
AsyncSubscriber's iteration), msgq.aio.AsyncClient and
the producer (msgq.enqueue, enqueue_batch, enqueue_dedup) against one private MariaDB and
a real msgqd ($MSGQD, else build/server/msgqd), shared by all tests (each
uses its own tables).

Run by ctest (msgq_python_client_test), or by hand:
  MSGQD=build/server/msgqd PYTHONPATH=build/client/python:client/python \
      /usr/bin/python3 -m unittest -v msgq_client_test
"""

from __future__ import annotations

import asyncio
import io
import threading
import time
import unittest
from contextlib import redirect_stderr
from typing import Any, List, Tuple

import grpc

import msgq
import msgq.aio
import msgq_inbox_testing as testing
from msgq.v1 import messaging_pb2, messaging_pb2_grpc


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


SERVER: Server


def setUpModule() -> None:
    global SERVER
    SERVER = Server()


def tearDownModule() -> None:
    SERVER.stop()


class ClientTest(unittest.TestCase):

    def setUp(self) -> None:
        self.server = SERVER
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


class BlockingTest(unittest.TestCase):
    """msgq.Subscriber, the blocking one: handler threads, heartbeats and
    the drain."""

    def setUp(self) -> None:
        self.server = SERVER

    def test_handlers_run_concurrently_and_settle(self):
        self.server.create("b_conc", ["1", "2", "3", "4", "5"])
        lock = threading.Lock()
        running: List[str] = []
        most: List[int] = []
        # 1..4 wait for each other: only 4 handlers at once get past it.
        four_at_once = threading.Barrier(4, timeout=20)

        def handler(m: msgq.Message) -> msgq.HandlerResult:
            with lock:
                running.append(m.id)
                most.append(len(running))
            if m.id != "5":
                four_at_once.wait()
            with lock:
                running.remove(m.id)
            if m.id == "2":
                return msgq.retry(3600, "later")
            if m.id == "3":
                return msgq.dead("poison")
            if m.id == "4":
                raise RuntimeError("boom")
            return None  # an ack

        sub = msgq.Subscriber(self.server.address, "b_conc", handler,
                              keyspace="msgq", concurrency=4, tracing=False)
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(sub.run(count=5), 5)
        self.assertEqual(err.getvalue(),
                         "msgq_consume: handler failed: RuntimeError('boom')\n")
        self.assertEqual(max(most), 4)
        self.assertEqual(sub.handled, 5)
        # run() returned once the acks were sent.
        self.assertEqual(self.server.rows("b_conc"),
                         [("1", "1", "1", "0", "-"),
                          ("2", "0", "1", "1", "later"),
                          ("3", "0", "1", "0", "poison"),
                          ("4", "0", "1", "1", "boom"),
                          ("5", "1", "1", "0", "-")])

    def heartbeat_run(self, table: str, max_extension: float,
                      count: int) -> Tuple[List[int], msgq.Subscriber]:
        """One message whose handler takes 5 s on a table with a 2 s ack
        wait and concurrency 2, until `count` handlers returned: the epochs
        the handler saw, and the subscriber."""
        self.server.create(table, ["1"], ack_wait=2)
        epochs: List[int] = []

        def handler(m: msgq.Message) -> None:
            epochs.append(m.epoch)
            if m.epoch == 0:
                time.sleep(5)  # the slow handler itself

        sub = msgq.Subscriber(self.server.address, table, handler,
                              keyspace="msgq", concurrency=2,
                              max_extension=max_extension, tracing=False)
        self.assertEqual(sub.run(count=count), count)
        return epochs, sub

    def test_heartbeats_keep_a_running_message(self):
        epochs, sub = self.heartbeat_run("b_hb", 600, 1)
        self.assertEqual(epochs, [0])
        # Past R + 5 s on a 2 s ack wait needs extends at R + 1, 2 and 3 s.
        self.assertGreaterEqual(sub.extended, 3)
        self.assertEqual(sub.lost, 0)
        self.assertEqual(self.server.rows("b_hb"), [("1", "1", "1", "0", "-")])

    def test_without_heartbeats_the_message_is_sent_again(self):
        # The same with heartbeats off: the ack wait passes while the
        # handler runs, and the message is sent again (epoch 1).
        epochs, sub = self.heartbeat_run("b_nohb", -1, 2)
        self.assertEqual(epochs, [0, 1])
        self.assertEqual(sub.extended, 0)
        self.assertEqual(self.server.rows("b_nohb"),
                         [("1", "1", "2", "0", "-")])

    def test_stop_drains_and_hands_back_the_unstarted(self):
        # stop() from the first handler: it finishes and is acked; 2 and 3,
        # received and not started, are handed back (due at once).
        self.server.create("b_stop", ["1", "2", "3"])
        seen: List[str] = []

        def handler(message: msgq.Message) -> msgq.HandlerResult:
            seen.append(message.id)
            sub.stop()
            return msgq.ack()

        sub = msgq.Subscriber(self.server.address, "b_stop", handler,
                              keyspace="msgq", tracing=False)
        self.assertEqual(sub.run(), 1)
        self.assertEqual(seen, ["1"])
        self.assertEqual(self.server.rows("b_stop"),
                         [("1", "1", "1", "0", "-"),
                          ("2", "0", "1", "1", "consumer stopped before it"),
                          ("3", "0", "1", "1", "consumer stopped before it")])
        due = self.server.db.sql(
            "SELECT id FROM msgq.b_stop WHERE time_next <= "
            "UNIX_TIMESTAMP(NOW(6)) * 1000000000 ORDER BY id")
        self.assertEqual([int(r[0]) for r in due], [2, 3])
        self.assertEqual(sub.run(), 0)  # stopped for good

    def test_a_group_gets_every_insert_and_its_acks_move_its_floor(self):
        # docs/design/consumer-groups.md: a group reads the table's inserts
        # after its creation; its acks are its own (the default group's
        # rows stay unsent and unacked) and move its floor in msgq_groups.
        self.server.create("b_group", [])
        channel = grpc.insecure_channel(self.server.address)
        self.addCleanup(channel.close)
        messaging_pb2_grpc.MessagingStub(channel).CreateGroup(
            messaging_pb2.CreateGroupRequest(
                keyspace="msgq", name="b_group", group="billing"),
            timeout=20)

        def floor() -> str:
            rows = self.server.db.sql(
                "SELECT floor_gtid FROM msgq.msgq_groups WHERE "
                "table_name = 'b_group' AND group_name = 'billing'")
            return str(rows[0][0], "utf-8") if isinstance(rows[0][0], bytes) \
                else str(rows[0][0])

        created = floor()
        for i in ("1", "2", "3"):  # three transactions
            self.server.db.sql("INSERT INTO msgq.b_group (id, message) "
                               "VALUES (%s, '{}')", (i,))
        seen: List[str] = []
        sub = msgq.Subscriber(self.server.address, "b_group",
                              lambda m: seen.append(m.id), keyspace="msgq",
                              group="billing", tracing=False)
        self.assertEqual(sub.run(count=3), 3)
        self.assertEqual(seen, ["1", "2", "3"])  # commit order
        # Acked by the group: its floor passed the first two transactions
        # (the third is the last one read: more of its rows could come).
        self.assertNotEqual(floor(), created)
        with msgq.Client(self.server.address, keyspace="msgq") as client:
            self.assertEqual(client.ack("b_group", ["1", "2", "3"],
                                        group="billing"), 0)  # already
            with self.assertRaises(msgq.errors.ServerError) as e:
                client.ack("b_group", ["1"], group="nope")
            self.assertEqual(e.exception.code().name, "NOT_FOUND")
        self.assertEqual(self.server.rows("b_group"),
                         [("1", "0", "0", "1", "-"),
                          ("2", "0", "0", "1", "-"),
                          ("3", "0", "0", "1", "-")])
        with self.assertRaises(msgq.errors.ServerError) as e:
            msgq.Subscriber(self.server.address, "b_group", lambda m: None,
                            keyspace="msgq", group="nope",
                            tracing=False).run()
        self.assertEqual(e.exception.code().name, "NOT_FOUND")
        self.assertIn('group "nope" of `msgq`.`b_group` not found; '
                      'its groups: billing', e.exception.details())

    def test_unknown_table_ends_run_with_the_package_error(self):
        sub = msgq.Subscriber(self.server.address, "no_such", lambda m: None,
                              keyspace="msgq")
        with self.assertRaises(msgq.errors.UnknownTable) as e:
            sub.run()
        self.assertEqual(e.exception.code().name, "NOT_FOUND")


class AsyncTest(unittest.TestCase):
    """msgq.aio; each test runs its coroutine with asyncio.run, bounded by
    asyncio.wait_for."""

    def setUp(self) -> None:
        self.server = SERVER

    def run_async(self, coroutine: Any, timeout: float = 60) -> Any:
        return asyncio.run(asyncio.wait_for(coroutine, timeout))

    def test_handlers_run_concurrently_and_settle(self):
        self.server.create("a_conc", ["1", "2", "3", "4", "5"])
        running: List[str] = []
        most = []
        four_at_once = asyncio.Event()

        async def handler(m: msgq.Message) -> msgq.HandlerResult:
            running.append(m.id)
            most.append(len(running))
            if len(running) == 4:
                four_at_once.set()
            if m.id != "5":
                # 1..4 wait for each other: only 4 concurrent handlers get
                # past this.
                await asyncio.wait_for(four_at_once.wait(), 20)
            running.remove(m.id)
            if m.id == "2":
                return msgq.retry(3600, "later")
            if m.id == "3":
                return msgq.dead("poison")
            if m.id == "4":
                raise RuntimeError("boom")
            return None  # an ack

        async def main() -> int:
            async with msgq.aio.AsyncSubscriber(
                    self.server.address, "a_conc", handler, keyspace="msgq",
                    concurrency=4, tracing=False) as sub:
                for _ in range(2000):  # 20 s at most
                    if sub.handled == 5:
                        break
                    await asyncio.sleep(0.01)
            return sub.handled

        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(self.run_async(main()), 5)
        self.assertEqual(err.getvalue(),
                         "msgq_consume: handler failed: RuntimeError('boom')\n")
        self.assertEqual(max(most), 4)
        # Leaving the block flushed the acks.
        self.assertEqual(self.server.rows("a_conc"),
                         [("1", "1", "1", "0", "-"),
                          ("2", "0", "1", "1", "later"),
                          ("3", "0", "1", "0", "poison"),
                          ("4", "0", "1", "1", "boom"),
                          ("5", "1", "1", "0", "-")])

    def heartbeat_run(self, table: str, max_extension: float) -> List[int]:
        """One message whose handler takes 5 s on a table with a 2 s ack
        wait and concurrency 2: the epochs the handler saw."""
        self.server.create(table, ["1"], ack_wait=2)
        epochs: List[int] = []

        async def handler(m: msgq.Message) -> None:
            epochs.append(m.epoch)
            if m.epoch == 0:
                await asyncio.sleep(5)

        async def main() -> None:
            async with msgq.aio.AsyncSubscriber(
                    self.server.address, table, handler, keyspace="msgq",
                    concurrency=2, max_extension=max_extension,
                    tracing=False) as sub:
                for _ in range(1500):  # 15 s at most
                    if sub.handled == len(epochs) and epochs and \
                            self.server.rows(table)[0][1] == "1":
                        break
                    await asyncio.sleep(0.01)
                self.extended = sub.extended

        self.run_async(main())
        return epochs

    def test_heartbeats_keep_a_running_message(self):
        self.assertEqual(self.heartbeat_run("a_hb", 600), [0])
        self.assertGreaterEqual(self.extended, 4)  # every 1 s for 5 s
        self.assertEqual(self.server.rows("a_hb"), [("1", "1", "1", "0", "-")])

    def test_without_heartbeats_the_message_is_sent_again(self):
        # The same run with heartbeats off: the ack wait passes while the
        # handler runs, and the message is sent again (epoch 1).
        self.assertEqual(self.heartbeat_run("a_nohb", -1), [0, 1])
        self.assertEqual(self.extended, 0)

    def test_iterate_and_settle(self):
        self.server.create("a_iter", ["1", "2", "3"])

        async def main() -> List[str]:
            seen: List[str] = []
            async with msgq.aio.AsyncSubscriber(
                    self.server.address, "a_iter", keyspace="msgq",
                    tracing=False) as sub:
                async for m in sub:
                    seen.append(m.id)
                    await sub.settle(m, msgq.dead("no") if m.id == "2"
                                     else msgq.ack())
                    if len(seen) == 3:
                        break
            return seen

        self.assertEqual(sorted(self.run_async(main())), ["1", "2", "3"])
        self.assertEqual(self.server.rows("a_iter"),
                         [("1", "1", "1", "0", "-"),
                          ("2", "0", "1", "0", "no"),
                          ("3", "1", "1", "0", "-")])

    def test_fan_in_settles_each_message_on_its_server(self):
        # Ids 1 and 2 on both servers: four different messages.
        other = Server()
        self.addCleanup(other.stop)
        for server in (self.server, other):
            server.create("a_fanin", ["1", "2"])
        seen: List[Tuple[str, str]] = []

        async def handler(m: msgq.Message) -> msgq.HandlerResult:
            seen.append((m.server, m.id))
            if m.server == other.address and m.id == "2":
                return msgq.dead("b2")
            return msgq.ack()

        async def main() -> None:
            async with msgq.aio.AsyncSubscriber(
                    [self.server.address, other.address], "a_fanin",
                    handler, keyspace="msgq", tracing=False) as sub:
                for _ in range(2000):  # 20 s at most
                    if sub.handled == 4:
                        break
                    await asyncio.sleep(0.01)

        self.run_async(main())
        self.assertEqual(sorted(seen), sorted(
            [(self.server.address, "1"), (self.server.address, "2"),
             (other.address, "1"), (other.address, "2")]))
        self.assertEqual(self.server.rows("a_fanin"),
                         [("1", "1", "1", "0", "-"), ("2", "1", "1", "0", "-")])
        self.assertEqual(other.rows("a_fanin"),
                         [("1", "1", "1", "0", "-"), ("2", "0", "1", "0", "b2")])

    def test_unknown_table_ends_run_with_the_package_error(self):
        async def main() -> None:
            sub = msgq.aio.AsyncSubscriber(self.server.address, "no_such",
                                           lambda m: None, keyspace="msgq")
            await sub.run()

        with self.assertRaises(msgq.errors.UnknownTable) as e:
            self.run_async(main())
        self.assertEqual(e.exception.code().name, "NOT_FOUND")

    def test_async_client(self):
        self.server.create("a_client", ["1", "2"])
        m1, m2 = peek(self.server.address, "a_client", 2)

        async def main() -> Tuple[Any, ...]:
            async with msgq.aio.AsyncClient(self.server.address,
                                            keyspace="msgq") as client:
                acked = await client.ack("a_client", [m1.id])
                nacked = await client.nack("a_client", [m2], dead=True,
                                           reason="x")
                dead = await client.list_dead("a_client")
                redriven = await client.redrive_all("a_client")
                await client.pause("a_client")
                paused = [t.paused for t in await client.list_tables()
                          if t.table.name == "a_client"]
                await client.resume("a_client")
                try:
                    await client.ack("no_such", ["1"])
                    missing = None
                except msgq.errors.UnknownTable as e:
                    missing = e.code().name
                return acked, nacked, [d.id for d in dead], redriven, \
                    paused, missing

        self.assertEqual(self.run_async(main()),
                         (1, msgq.Nacked(0, 1), ["2"], 1, [True],
                          "NOT_FOUND"))


def producer_ddl(name: str, id_type: str = "varchar(36)",
                 extra: str = "") -> str:
    """A message table with the producer's optional columns (`extra`:
    more columns)."""
    return ("CREATE TABLE msgq.`%s` (id %s NOT NULL, "
            "priority tinyint NOT NULL DEFAULT 50, "
            "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
            "time_acked bigint DEFAULT NULL, message longtext, %s"
            "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, "
            "time_next)) COMMENT 'vitess_message,vt_ack_wait=30,"
            "vt_purge_after=86400,vt_batch_size=10,vt_cache_size=10000,"
            "vt_poller_interval=1'" % (name, id_type, extra))


PRODUCER_COLUMNS = ("message_key varchar(64) DEFAULT NULL, "
                    "message_type varchar(64) DEFAULT NULL, "
                    "headers json DEFAULT NULL, "
                    "traceparent varchar(55) DEFAULT NULL, "
                    "tracestate varchar(512) DEFAULT NULL, ")


class ProducerTest(unittest.TestCase):
    """msgq.enqueue / enqueue_batch on a MySQLdb connection of the test's
    own, inside its transaction."""

    def setUp(self) -> None:
        self.server = SERVER
        self.conn = self.server.db.connect("msgq")
        self.addCleanup(self.conn.close)

    def test_enqueue_commits_with_the_transaction(self):
        self.server.db.sql(producer_ddl("p_tx", extra=PRODUCER_COLUMNS))
        self.server.wait_loaded("p_tx")
        rolled_back = msgq.enqueue(self.conn, "p_tx", {"n": 0})
        self.conn.rollback()
        msg_id = msgq.enqueue(self.conn, "p_tx", {"order": 7, "total": 2.5},
                              key="customer-1", type="order.placed",
                              headers={"source": "web", "a": "1"})
        self.conn.commit()
        self.assertRegex(msg_id, r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-"
                                 r"[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        self.assertNotEqual(rolled_back, msg_id)
        self.assertEqual(self.server.db.sql(
            "SELECT id, message, message_key, message_type, headers, "
            "time_next, traceparent FROM msgq.p_tx"),
            ((msg_id, '{"order":7,"total":2.5}', "customer-1",
              "order.placed", '{"a":"1","source":"web"}', 0, None),))
        seen: List[Tuple[str, Any, Any]] = []
        msgq.Subscriber(self.server.address, "p_tx",
                        lambda m: seen.append((m.id, m.get("message"),
                                               m.get("message_key"))),
                        keyspace="msgq", tracing=False).run(count=1)
        self.assertEqual(seen, [(msg_id, '{"order":7,"total":2.5}',
                                 "customer-1")])

    def test_delay_is_mysqls_now_plus_the_delay(self):
        self.server.db.sql(producer_ddl("p_delay"))
        msgq.enqueue(self.conn, "p_delay", "later", id="d1", delay=30)
        self.conn.commit()
        ((ahead,),) = self.server.db.sql(
            "SELECT time_next - UNIX_TIMESTAMP(NOW(6)) * 1000000000 "
            "FROM msgq.p_delay")
        self.assertGreater(ahead, 25e9)
        self.assertLessEqual(ahead, 30e9)

    def test_batch_with_integer_ids_and_defaults(self):
        self.server.db.sql(producer_ddl("p_batch", id_type="bigint"))
        ids = msgq.enqueue_batch(self.conn, msgq.Table("p_batch", "msgq"), [
            msgq.Outgoing({"n": 1}, id=1),
            msgq.Outgoing(b"raw", id=2, columns={"priority": 10}),
            msgq.Outgoing(None, id="3")])
        self.conn.commit()
        self.assertEqual(ids, ["1", "2", "3"])
        self.assertEqual(self.server.db.sql(
            "SELECT id, priority, message, time_next FROM msgq.p_batch "
            "ORDER BY id"),
            ((1, 50, '{"n":1}', 0), (2, 10, "raw", 0), (3, 50, None, 0)))
        self.assertEqual(msgq.enqueue_batch(self.conn, "p_batch", []), [])

    def test_duplicate_id_and_bad_arguments(self):
        import MySQLdb
        self.server.db.sql(producer_ddl("p_dup"))
        msgq.enqueue(self.conn, "p_dup", "x", id="same")
        with self.assertRaises(MySQLdb.IntegrityError) as e:
            msgq.enqueue(self.conn, "p_dup", "y", id="same")
        self.assertEqual(e.exception.args[0], 1062)
        with self.assertRaises(MySQLdb.OperationalError) as e:
            msgq.enqueue(self.conn, "p_dup", "z", key="k")  # no message_key
        self.assertEqual(e.exception.args[0], 1054)
        self.conn.commit()  # the failed statements left the first in place
        self.assertEqual(self.server.db.sql("SELECT id FROM msgq.p_dup"),
                         (("same",),))
        with self.assertRaises(ValueError):
            msgq.enqueue(self.conn, "p_dup`; DROP TABLE x", "x")
        with self.assertRaises(ValueError):
            msgq.enqueue(self.conn, "p_dup", "x", delay=-1)
        with self.assertRaises(ValueError):
            msgq.enqueue(self.conn, "p_dup", "x", columns={"id": "1"})
        with self.assertRaises(TypeError):
            msgq.enqueue(self.conn, "p_dup", "x", id=1.5)  # type: ignore

    def test_trace_context_goes_to_the_trace_columns(self):
        from unittest import mock
        import sys
        from msgq_trace_test import make_fake_opentelemetry
        modules, _ = make_fake_opentelemetry()
        with mock.patch.dict(sys.modules, modules):
            msgq.trace._reset_otel()
            self.addCleanup(msgq.trace._reset_otel)
            otel = modules["opentelemetry.trace"]
            span = otel.NonRecordingSpan(otel.SpanContext(
                0x4bf92f3577b34da6a3ce929d0e0e4736, 0x00f067aa0ba902b7, True,
                otel.TraceFlags(1), otel.TraceState.from_header(["k=v"])))
            context = otel.set_span_in_context(span)
            self.server.db.sql(producer_ddl("p_trace",
                                            extra=PRODUCER_COLUMNS))
            self.server.db.sql(producer_ddl("p_notrace"))
            msgq.enqueue(self.conn, "p_trace", "t", id="t1", context=context)
            msgq.enqueue(self.conn, "p_notrace", "t", id="t2",
                         context=context)
            self.conn.commit()
        self.assertEqual(self.server.db.sql(
            "SELECT traceparent, tracestate FROM msgq.p_trace"),
            (("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
              "k=v"),))
        self.assertEqual(self.server.db.sql(
            "SELECT id FROM msgq.p_notrace"), (("t2",),))

    def test_dedup_two_producers_race_and_one_row_is_kept(self):
        import threading
        import MySQLdb
        dedup = ("dedup_key varchar(64) DEFAULT NULL, time_created bigint "
                 "DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000), "
                 "UNIQUE KEY dedup_key (dedup_key), ")
        self.server.db.sql(producer_ddl("p_dedup", extra=dedup).replace(
            "vt_poller_interval=1'",
            "vt_poller_interval=1,msgq_dedup_window=60'"))
        self.server.wait_loaded("p_dedup")
        first = msgq.enqueue_dedup(self.conn, "p_dedup", "a", dedup_key="k0")
        self.conn.commit()
        self.assertFalse(first.duplicate)
        self.assertEqual(
            msgq.enqueue_dedup(self.conn, "p_dedup", "b", dedup_key="k0"),
            msgq.Enqueued(first.id, True))
        self.assertEqual(
            [r.duplicate for r in msgq.enqueue_dedup_batch(
                self.conn, "p_dedup", [msgq.Outgoing("c", dedup_key="k1"),
                                       msgq.Outgoing("d", dedup_key="k1")])],
            [False, True])
        with self.assertRaises(MySQLdb.IntegrityError) as e:
            msgq.enqueue(self.conn, "p_dedup", "e", dedup_key="k0")
        self.assertEqual(e.exception.args[0], 1062)
        with self.assertRaises(ValueError):
            msgq.enqueue_dedup_batch(self.conn, "p_dedup",
                                     [msgq.Outgoing("f")])
        self.conn.commit()

        # Two producers, each key in its own transaction, at once.
        keys = ["race-%d" % i for i in range(100)]
        results: List[List[msgq.Enqueued]] = [[], []]
        start = threading.Barrier(2)

        def produce(p: int) -> None:
            conn = self.server.db.connect("msgq")
            try:
                start.wait()
                for k in keys:
                    results[p].append(msgq.enqueue_dedup(
                        conn, "p_dedup", {"p": p}, dedup_key=k))
                    conn.commit()
            finally:
                conn.close()

        threads = [threading.Thread(target=produce, args=(p,))
                   for p in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([len(r) for r in results], [100, 100])
        rows = dict(self.server.db.sql(
            "SELECT dedup_key, id FROM msgq.p_dedup WHERE dedup_key LIKE "
            "'race-%%'"))
        self.assertEqual(sorted(rows), sorted(keys))
        for i, k in enumerate(keys):
            a, b = results[0][i], results[1][i]
            self.assertEqual((a.id, b.id), (rows[k], rows[k]), k)
            self.assertEqual(sorted([a.duplicate, b.duplicate]),
                             [False, True], k)
        self.assertEqual(self.server.db.sql(
            "SELECT COUNT(*) FROM msgq.p_dedup"), ((102,),))


if __name__ == "__main__":
    unittest.main()
