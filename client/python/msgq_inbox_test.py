"""Tests of msgq.Inbox (docs/effectively-once.md) against real MariaDB
servers and msgqd.

InboxTest: the helper alone on a private MariaDB (the consumer's database):
once per id, rollbacks, a failed commit, the missing-grant error, purge.
InboxTwoConsumersTest: msgqd on a first MariaDB, two consumer processes on a
second one; a message redelivered while the first consumer still holds it
is applied by one and acked without applying by the other.
The kill campaign is msgq_inbox_kill_test.py.

Run by ctest (msgq_inbox_py_test), or by hand:
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 \
      -m unittest -v msgq_inbox_test
"""

import json
import os
import shutil
import tempfile
import threading
import time
import unittest

import msgq
import msgq_inbox_testing as testing
from msgq.v1 import messaging_pb2


def message(id_: int, amount: int = 1) -> msgq.Message:
    fields = [messaging_pb2.Field(name="id", type="bigint"),
              messaging_pb2.Field(name="message", type="json")]
    body = json.dumps({"from": 1, "to": 2, "amount": amount}).encode()
    return msgq.Message(fields, [str(id_).encode(), body])


class InboxTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.db = testing.MariaDB()
        testing.setup_bank(cls.db, 1000)

    @classmethod
    def tearDownClass(cls):
        cls.db.stop()

    def setUp(self):
        self.db.sql("UPDATE accounts SET balance = IF(id = 1, 1000, 0)",
                    db="bank")
        self.db.sql("DELETE FROM applied", db="bank")
        self.db.sql("DROP TABLE IF EXISTS msgq_inbox", db="bank")
        self.runs = 0
        self.inbox = msgq.Inbox(connect=lambda: self.db.connect("bank"),
                                source="test")
        self.addCleanup(self.inbox.close)

    def balances(self):
        return dict(self.db.sql("SELECT id, balance FROM accounts",
                                db="bank"))

    def inbox_ids(self):
        return sorted(int(r[0]) for r in self.db.sql(
            "SELECT message_id FROM msgq_inbox", db="bank"))

    def work(self, m, cursor):
        self.runs += 1
        testing.transfer(m, cursor)
        return msgq.ack()

    def test_runs_once_then_acks_duplicates_without_running(self):
        handler = self.inbox.handler("transfers", self.work, keyspace="msgq")
        self.assertEqual(handler(message(7, 30)), msgq.ack())
        self.assertEqual(handler(message(7, 30)), msgq.ack())
        self.assertEqual(handler(message(7, 30)), msgq.ack())
        self.assertEqual(self.runs, 1)
        self.assertEqual((self.inbox.processed, self.inbox.duplicates), (1, 2))
        self.assertEqual(self.balances(), {1: 970, 2: 30})
        self.assertEqual(self.db.sql(
            "SELECT source, keyspace, table_name, message_id FROM msgq_inbox",
            db="bank"), (("test", "msgq", "transfers", b"7"),))
        # The key includes the source, keyspace and table.
        other = msgq.Inbox(connect=lambda: self.db.connect("bank"),
                           source="other")
        self.addCleanup(other.close)
        self.assertEqual(other.handler("transfers", self.work, "msgq")(
            message(7, 30)), msgq.ack())
        self.assertEqual(self.inbox.handler("refunds", self.work, "msgq")(
            message(7, 30)), msgq.ack())
        self.assertEqual(self.runs, 3)

    def test_failed_work_rolls_back_with_its_inbox_row(self):
        def fails(m, cursor):
            self.work(m, cursor)
            raise RuntimeError("backend down")
        result = self.inbox.handler("t", fails)(message(1, 5))
        self.assertEqual(result, msgq.retry(reason="backend down"))

        def retries(m, cursor):
            self.work(m, cursor)
            return msgq.retry(delay=5, reason="later")
        self.assertEqual(self.inbox.handler("t", retries)(message(1, 5)),
                         msgq.retry(delay=5, reason="later"))

        def kills(m, cursor):
            self.work(m, cursor)
            return msgq.dead("bad")
        self.assertEqual(self.inbox.handler("t", kills)(message(1, 5)),
                         msgq.dead("bad"))
        self.assertEqual(self.balances(), {1: 1000, 2: 0})
        self.assertEqual(self.inbox_ids(), [])
        self.assertEqual(self.runs, 3)
        # Then it succeeds, once.
        self.assertEqual(self.inbox.handler("t", self.work)(message(1, 5)),
                         msgq.ack())
        self.assertEqual(self.balances(), {1: 995, 2: 5})
        self.assertEqual(self.inbox_ids(), [1])

    def test_failed_commit_rolls_back_and_reconnects(self):
        def lose_connection(m, cursor):
            self.work(m, cursor)
            cursor.execute("SELECT CONNECTION_ID()")
            (conn_id,), = cursor.fetchall()
            self.db.sql("KILL %d" % conn_id)  # the commit will fail
            return msgq.ack()
        result = self.inbox.handler("t", lose_connection)(message(2, 9))
        self.assertIsInstance(result, msgq.Retry)
        self.assertIn("inbox:", result.reason)
        self.assertEqual(self.balances(), {1: 1000, 2: 0})
        self.assertEqual(self.inbox_ids(), [])
        self.assertEqual(self.inbox.processed, 0)
        # The next message reconnects.
        self.assertEqual(self.inbox.handler("t", self.work)(message(2, 9)),
                         msgq.ack())
        self.assertEqual(self.balances(), {1: 991, 2: 9})

    def test_missing_create_grant_is_named(self):
        self.db.sql("CREATE USER IF NOT EXISTS 'nocreate'@'localhost' "
                    "IDENTIFIED BY 'pw'")
        self.db.sql("GRANT SELECT, INSERT, UPDATE, DELETE ON bank.* TO "
                    "'nocreate'@'localhost'")
        inbox = msgq.Inbox(connect=lambda: self.db.connect(
            "bank", user="nocreate", password="pw"), source="test")
        self.addCleanup(inbox.close)
        with self.assertRaises(msgq.InboxError) as cm:
            inbox.ensure_table()
        self.assertIn("GRANT CREATE", str(cm.exception))
        self.assertIn("schema/msgq_inbox.sql", str(cm.exception))
        # As a handler: a retry carrying that text, the work not run.
        result = inbox.handler("t", self.work)(message(3))
        self.assertIsInstance(result, msgq.Retry)
        self.assertIn("GRANT CREATE", result.reason)
        self.assertEqual(self.runs, 0)
        # Created by someone who may, it works for the user without CREATE.
        self.inbox.ensure_table()
        self.assertEqual(inbox.handler("t", self.work)(message(3)), msgq.ack())
        self.assertEqual(self.runs, 1)

    def test_create_false_does_not_create(self):
        inbox = msgq.Inbox(connect=lambda: self.db.connect("bank"),
                           source="test", create=False,
                           inbox_table="my_inbox")
        self.addCleanup(inbox.close)
        with self.assertRaises(msgq.InboxError) as cm:
            inbox.ensure_table()
        self.assertIn("does not exist", str(cm.exception))
        with self.assertRaises(ValueError):
            msgq.Inbox(connect=lambda: None, source="s",
                       inbox_table="x; DROP TABLE y")

    def test_purge_after_retention_and_not_before(self):
        handler = self.inbox.handler("t", self.work)
        for i in range(1, 26):
            self.assertEqual(handler(message(i)), msgq.ack())
        # Ages by the database's clock: 1..10 processed 100 s ago, 11..15
        # 50 s ago, 16..25 now.
        self.db.sql("UPDATE msgq_inbox SET processed_at = NOW(6) - INTERVAL "
                    "100 SECOND WHERE CAST(message_id AS UNSIGNED) <= 10",
                    db="bank")
        self.db.sql("UPDATE msgq_inbox SET processed_at = NOW(6) - INTERVAL "
                    "50 SECOND WHERE CAST(message_id AS UNSIGNED) "
                    "BETWEEN 11 AND 15", db="bank")
        self.assertEqual(self.inbox.purge(retention=200), 0)
        self.assertEqual(len(self.inbox_ids()), 25)
        # Batches of 3: 10 rows take 4 statements.
        self.assertEqual(self.inbox.purge(retention=60, batch=3), 10)
        self.assertEqual(self.inbox_ids(), list(range(11, 26)))
        self.assertEqual(self.inbox.purge(retention=60, batch=3), 0)
        self.assertEqual(self.inbox.purge(retention=40), 5)
        self.assertEqual(self.inbox_ids(), list(range(16, 26)))
        with self.assertRaises(ValueError):
            self.inbox.purge(retention=0)
        # A purged id is processed again if it ever came back: why the
        # retention must exceed the longest redelivery.
        self.assertEqual(handler(message(1)), msgq.ack())
        self.assertEqual(self.runs, 26)


class InboxTwoConsumersTest(unittest.TestCase):
    """Two consumer processes, one redelivered message."""

    def setUp(self):
        self.msgq_db = testing.MariaDB()
        self.addCleanup(self.msgq_db.stop)
        self.bank_db = testing.MariaDB()
        self.addCleanup(self.bank_db.stop)
        self.tmp = tempfile.mkdtemp(prefix="msgq-inbox-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.msgq_db.sql("CREATE DATABASE msgq")
        self.msgq_db.sql(testing.message_table_ddl("transfers", ack_wait=1))
        testing.setup_bank(self.bank_db, 1000)
        self.server = testing.Msgqd(self.msgq_db.socket, testing.free_port())
        self.server.start()
        self.addCleanup(self.server.stop)

    def wait_for(self, predicate, what, timeout=30):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                logs = ""
                for name in sorted(os.listdir(self.tmp)):
                    with open(os.path.join(self.tmp, name), errors="replace") as f:
                        logs += "--- %s\n%s" % (name, f.read()[-2000:])
                logs += "--- rows %r, trx %r\n" % (
                    self.msgq_db.sql("SELECT id, epoch, time_next, time_acked "
                                     "FROM msgq.transfers"),
                    self.bank_db.sql("SELECT trx_state, trx_query FROM "
                                     "information_schema.innodb_trx"))
                logs += "--- processlist %r\n" % (self.bank_db.sql(
                    "SELECT id, command, state, info FROM "
                    "information_schema.processlist"),)
                self.server.log.seek(0)
                logs += "--- msgqd\n" + self.server.log.read()[-2000:].decode(
                    errors="replace")
                self.fail("timed out waiting for %s\n%s" % (what, logs))
            time.sleep(0.02)

    def inbox_inserts_waiting(self):
        # (innodb_trx does not always list the waiting transaction.)
        return self.bank_db.sql(
            "SELECT COUNT(*) FROM information_schema.processlist "
            "WHERE command = 'Query' AND info LIKE 'INSERT INTO `msgq_inbox`%%'"
            )[0][0]

    def test_one_applies_the_other_acks_without_applying(self):
        hold = os.path.join(self.tmp, "release")
        a_events = os.path.join(self.tmp, "a.events")
        b_events = os.path.join(self.tmp, "b.events")
        a = testing.Consumer(self.server.address, "transfers",
                             self.bank_db.socket, a_events, hold_file=hold,
                             leave_on_work=True)
        self.addCleanup(a.kill)
        self.msgq_db.sql("INSERT INTO msgq.transfers (id, message) VALUES "
                         "(1, %s)", (json.dumps(
                             {"from": 1, "to": 2, "amount": 25}),))
        # A runs the work and holds its transaction open (inbox row locked),
        # having left msgqd (else round-robin might hand it every resend).
        self.wait_for(lambda: ["run", "1"] in testing.read_events(a_events),
                      "consumer A to start the work")
        b = testing.Consumer(self.server.address, "transfers",
                             self.bank_db.socket, b_events, hold_file=hold)
        self.addCleanup(b.kill)
        # After the ack wait (1 s) the message goes again, to B: B's INSERT
        # waits on A's row lock.
        self.wait_for(lambda: self.inbox_inserts_waiting() == 1,
                      "consumer B to wait on the inbox row")
        open(hold, "w").close()  # A commits (its ack is lost); B gets a
        # duplicate key and acks.
        self.wait_for(lambda: ["dup", "1"] in testing.read_events(b_events),
                      "consumer B to skip the message")
        self.wait_for(lambda: self.msgq_db.sql(
            "SELECT time_acked IS NOT NULL FROM msgq.transfers")[0][0] == 1,
            "the message to be acked")
        a_ev, b_ev = testing.read_events(a_events), testing.read_events(b_events)
        self.assertEqual(a_ev, [["run", "1"], ["commit", "1"]])
        self.assertNotIn(["run", "1"], b_ev)
        self.assertEqual(dict(self.bank_db.sql(
            "SELECT id, balance FROM accounts", db="bank")), {1: 975, 2: 25})
        self.assertEqual(self.bank_db.sql(
            "SELECT message_id, times FROM applied", db="bank"), ((1, 1),))


if __name__ == "__main__":
    unittest.main()
