"""The inbox's kill campaign (docs/effectively-once.md): msgqd on one
private MariaDB, consumer processes moving money between two accounts of a
second one through msgq.Inbox, and kill -9 of msgqd and of the consumers at
random moments, plus consumers that SIGKILL themselves right after a commit
and before its ack. At the end every message was applied exactly once (the
balances and a per-message counter prove it) and every message is acked.

Run by ctest (msgq_inbox_py_kill_test), or by hand:
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 \\
      -m unittest -v msgq_inbox_kill_test
MSGQ_INBOX_SEED=N replays a campaign (the seed is printed).
"""

import json
import os
import random
import shutil
import tempfile
import time
import unittest

import msgq_inbox_testing as testing

MESSAGES = 200
KILLS = 15
CONSUMERS = 2
OPENING = 1000000
# Probability that a consumer SIGKILLs itself right after a commit.
CRASH = 0.1


class InboxKillTest(unittest.TestCase):

    def setUp(self):
        seed = int(os.environ.get("MSGQ_INBOX_SEED") or time.time_ns() % 100000)
        print("MSGQ_INBOX_SEED=%d" % seed)
        self.rng = random.Random(seed)
        self.msgq_db = testing.MariaDB()
        self.addCleanup(self.msgq_db.stop)
        self.bank_db = testing.MariaDB()
        self.addCleanup(self.bank_db.stop)
        self.tmp = tempfile.mkdtemp(prefix="msgq-inbox-kill-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.msgq_db.sql("CREATE DATABASE msgq")
        # Small batches, a 1 s ack wait and a 2 s cap on the backoff, so
        # that redeliveries come quickly.
        self.msgq_db.sql(testing.message_table_ddl(
            "transfers", ack_wait=1, batch=5, extra=",vt_max_backoff=2"))
        testing.setup_bank(self.bank_db, OPENING)
        self.server = testing.Msgqd(self.msgq_db.socket, testing.free_port())
        self.server.start()
        self.addCleanup(self.server.stop)
        self.consumers = []
        self.addCleanup(lambda: [c.kill() for c in self.consumers])
        self.started = 0

    def consumer(self, crash_after_commit):
        self.started += 1
        c = testing.Consumer(
            self.server.address, "transfers", self.bank_db.socket,
            os.path.join(self.tmp, "c%d.events" % self.started),
            crash_after_commit=crash_after_commit,
            seed=self.rng.randrange(1 << 30), work_delay=0.03)
        self.consumers.append(c)
        return c

    def events(self):
        out = []
        for name in os.listdir(self.tmp):
            if name.endswith(".events"):
                out += testing.read_events(os.path.join(self.tmp, name))
        return out

    def acked(self):
        return self.msgq_db.sql("SELECT COUNT(*) FROM msgq.transfers "
                                "WHERE time_acked IS NOT NULL")[0][0]

    def test_each_message_applied_once_and_acked_across_kills(self):
        for i in range(1, MESSAGES + 1):
            self.msgq_db.sql(
                "INSERT INTO msgq.transfers (id, message) VALUES (%s, %s)",
                (i, json.dumps({"from": 1, "to": 2, "amount": i})))
        start = time.monotonic()
        # The window between a commit and its ack is hit at least once, on
        # any machine: a first consumer crashes right after its first commit
        # before the random kills start (which may, on a slow machine, kill
        # every crashing consumer before it commits anything).
        opener = self.consumer(1.0)
        opener_deadline = time.monotonic() + 60
        while opener.alive():
            self.assertLess(time.monotonic(), opener_deadline,
                            "the opening consumer did not crash")
            time.sleep(0.05)
        self.assertEqual(opener.proc.returncode, -9)
        live = [self.consumer(CRASH) for _ in range(CONSUMERS)]
        kills = {"msgqd": 0, "consumer": 0, "both": 0}
        killed = set()  # consumers this test killed
        for _ in range(KILLS):
            time.sleep(self.rng.uniform(0.2, 1.0))
            action = self.rng.choice(["msgqd", "consumer", "consumer", "both"])
            kills[action] += 1
            if action in ("msgqd", "both"):
                self.server.kill()
            if action in ("consumer", "both"):
                victim = live[self.rng.randrange(len(live))]
                killed.add(victim)
                victim.kill()
            if action in ("msgqd", "both"):
                time.sleep(self.rng.uniform(0, 0.3))
                self.server.start()
            # Replace the dead: killed here, or by their own crash hook
            # (between a commit and its ack), or exited (no msgqd at start).
            for j, c in enumerate(live):
                if not c.alive():
                    live[j] = self.consumer(CRASH)
        # Let the crashing consumers run a little more, then finish with
        # consumers that do not crash.
        time.sleep(1)
        for c in live:
            killed.add(c)
            c.kill()
        self_crashes = sum(1 for c in self.consumers
                           if c.proc.returncode == -9 and c not in killed)
        live = [self.consumer(0.0) for _ in range(CONSUMERS)]
        deadline = time.monotonic() + 90
        while self.acked() < MESSAGES:
            self.assertLess(time.monotonic(), deadline,
                            "only %d of %d acked" % (self.acked(), MESSAGES))
            for j, c in enumerate(live):
                if not c.alive():
                    live[j] = self.consumer(0.0)
            time.sleep(0.1)
        elapsed = time.monotonic() - start
        events = self.events()
        runs = sum(1 for e in events if e[0] == "run")
        commits = sum(1 for e in events if e[0] == "commit")
        dups = sum(1 for e in events if e[0] == "dup")
        print("campaign: %d messages, kills %r, %d consumers started, "
              "crashes right after a commit %d, "
              "work runs %d, commits %d, duplicates acked %d, %.1f s"
              % (MESSAGES, kills, self.started, self_crashes, runs,
                 commits, dups, elapsed))
        # Exactly once: each message applied once, the balances add up.
        applied = dict(self.bank_db.sql(
            "SELECT message_id, times FROM applied", db="bank"))
        self.assertEqual(applied, {i: 1 for i in range(1, MESSAGES + 1)})
        total = MESSAGES * (MESSAGES + 1) // 2
        self.assertEqual(dict(self.bank_db.sql(
            "SELECT id, balance FROM accounts", db="bank")),
            {1: OPENING - total, 2: total})
        # (A kill between the COMMIT and the "commit" line loses the line.)
        self.assertLessEqual(commits, MESSAGES)
        self.assertEqual(self.bank_db.sql(
            "SELECT COUNT(*) FROM msgq_inbox", db="bank")[0][0], MESSAGES)
        self.assertEqual(self.acked(), MESSAGES)
        # The campaign did hit the window between commit and ack.
        self.assertGreater(self_crashes, 0)
        self.assertGreater(dups, 0)


if __name__ == "__main__":
    unittest.main()
