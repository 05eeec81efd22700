"""The msgq Python package installed offline and used against real msgqd
servers on a private MariaDB (ctest packaging_python).

setUpClass copies client/python and proto/ of the checkout into a temporary
directory, installs the package into a venv (--system-site-packages, so
Debian's grpcio is used) with pip --no-build-isolation --no-index (no
network), starts a private MariaDB (tools/mariadb-private) with databases
msgq_a and msgq_b, and one msgqd on each. The tests import the installed
package (never the checkout's) and consume, ack, retry, kill and fan in.

  MSGQ_SOURCE_DIR=. MSGQ_BUILD_DIR=build /usr/bin/python3 \
      tests/packaging_python_test.py -v
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.path.abspath(os.environ.get("MSGQ_SOURCE_DIR", "."))
BUILD = os.path.abspath(os.environ.get("MSGQ_BUILD_DIR", "build"))
TABLES = ("t_ack", "t_retry", "t_dead", "t_fanin", "t_cli")
COMMENT = ("vitess_message,vt_ack_wait=30,vt_purge_after=86400,"
           "vt_batch_size=10,vt_cache_size=10000,vt_poller_interval=1")


def run(args, **kwargs):
    r = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (
            args, r.returncode, r.stdout, r.stderr))
    return r.stdout


class Env:
    """The venv, the private MariaDB and the two msgqd of the test run."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="msgq-pypkg-test-")
        self.msgqd = []
        self.logs = []
        self.db_dir = os.path.join(self.tmp, "db")
        self.socket = None

    def install(self):
        src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(SRC, "client", "python"),
                        os.path.join(src, "client", "python"),
                        ignore=shutil.ignore_patterns(
                            "build", "*.egg-info", "__pycache__"))
        shutil.copytree(os.path.join(SRC, "proto"), os.path.join(src, "proto"))
        venv = os.path.join(self.tmp, "venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        self.python = os.path.join(venv, "bin", "python")
        self.consume_script = os.path.join(venv, "bin", "msgq-consume")
        run([self.python, "-m", "pip", "install", "--no-build-isolation",
             "--no-index", "--no-cache-dir", "--disable-pip-version-check",
             os.path.join(src, "client", "python")])
        self.site = run([self.python, "-c",
                         "import sysconfig; print(sysconfig.get_paths()"
                         "['purelib'])"]).strip()

    def start_mariadb(self):
        out = run([os.path.join(SRC, "tools", "mariadb-private"), "start",
                   self.db_dir, "--owner-pid=%d" % os.getpid()])
        for line in out.splitlines():
            if line.startswith("MSGQ_MYSQL_SOCKET="):
                self.socket = line.split("=", 1)[1]
        for db in ("msgq_a", "msgq_b"):
            ddl = ["CREATE DATABASE %s" % db, "USE %s" % db]
            with open(os.path.join(SRC, "schema", "message_table.sql")) as f:
                ddl.append(f.read())
            for t in TABLES:
                ddl.append("CREATE TABLE %s LIKE demo" % t)
                ddl.append("ALTER TABLE %s COMMENT='%s'" % (t, COMMENT))
            self.sql("", ";\n".join(ddl))

    def sql(self, db, statements):
        return run(["mariadb", "--no-defaults", "-S", self.socket, "-uroot",
                    "-N", "-B"] + ([db] if db else []), input=statements)

    def start_msgqd(self, database, server_id):
        log = open(os.path.join(self.tmp, database + ".log"), "w+")
        self.logs.append(log)
        proc = subprocess.Popen(
            [os.path.join(BUILD, "server", "msgqd"),
             "--mysql_socket=" + self.socket, "--databases=" + database,
             "--listen=127.0.0.1:0", "--http_listen=",
             "--mysql_protocol_listen=",
             "--binlog_server_id=%d" % server_id],
            stdout=log, stderr=subprocess.STDOUT)
        self.msgqd.append(proc)
        # msgqd prints "msgqd listening on HOST:PORT" once it serves.
        for _ in range(600):
            log.seek(0)
            for line in log.read().splitlines():
                if line.startswith("msgqd listening on "):
                    return line[len("msgqd listening on "):]
            if proc.poll() is not None:
                break
            time.sleep(0.1)  # polling a log file: no notification to wait on
        log.seek(0)
        raise AssertionError("msgqd did not start:\n" + log.read())

    def close(self):
        for proc in self.msgqd:
            proc.terminate()
            proc.wait(30)
        for log in self.logs:
            log.close()
        subprocess.run([os.path.join(SRC, "tools", "mariadb-private"), "stop",
                        self.db_dir, "--kill"], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


class InstalledPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = Env()
        try:
            cls.env.install()
            cls.env.start_mariadb()
            cls.a = cls.env.start_msgqd("msgq_a", 4101)
            cls.b = cls.env.start_msgqd("msgq_b", 4102)
        except BaseException:
            cls.env.close()
            raise
        sys.path.insert(0, cls.env.site)
        import msgq  # the installed one
        cls.msgq = msgq

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def insert(self, db, table, *ids):
        values = ",".join("(%d, '{\"n\": %d}')" % (i, i) for i in ids)
        self.env.sql(db, "INSERT INTO %s (id, message) VALUES %s"
                     % (table, values))

    def rows(self, db, table):
        """id, acked?, dead?, last_error per row. (Not the epoch: msgqd may
        write a send's epoch after the ack of that send.)"""
        out = self.env.sql(db, (
            "SELECT id, time_acked IS NOT NULL, time_acked IS NULL AND "
            "time_next IS NULL, IFNULL(last_error, '-') FROM %s "
            "ORDER BY id") % table)
        return [tuple(line.split("\t")) for line in out.splitlines()]

    def test_imports_the_installed_package_with_its_stubs(self):
        from msgq.v1 import messaging_pb2
        self.assertTrue(self.msgq.__file__.startswith(self.env.site),
                        self.msgq.__file__)
        self.assertTrue(messaging_pb2.__file__.startswith(self.env.site),
                        messaging_pb2.__file__)
        # Typed (PEP 561).
        self.assertTrue(os.path.isfile(os.path.join(self.env.site, "msgq",
                                                    "py.typed")))

    def test_consume_and_ack(self):
        self.insert("msgq_a", "t_ack", 1, 2)
        seen = []
        n = self.msgq.Subscriber(self.a, "t_ack", lambda m: seen.append(
            (m.id, m.get("message"), m.server)), token="ignored").run(count=2)
        self.assertEqual(n, 2)
        self.assertEqual(sorted(seen), [("1", '{"n": 1}', self.a),
                                        ("2", '{"n": 2}', self.a)])
        self.assertEqual(self.rows("msgq_a", "t_ack"),
                         [("1", "1", "0", "-"), ("2", "1", "0", "-")])

    def test_retry_then_ack(self):
        self.insert("msgq_a", "t_retry", 5)
        epochs = []

        def handler(m):
            epochs.append(m.epoch)
            if len(epochs) == 1:
                return self.msgq.retry(delay=0, reason="not yet")
            return self.msgq.ack()

        n = self.msgq.Subscriber(self.a, "t_retry", handler).run(count=2)
        self.assertEqual(n, 2)
        self.assertEqual(epochs, [0, 1])
        self.assertEqual(self.rows("msgq_a", "t_retry"),
                         [("5", "1", "0", "not yet")])

    def test_dead(self):
        self.insert("msgq_a", "t_dead", 7)
        n = self.msgq.Subscriber(self.a, "t_dead", lambda m: self.msgq.dead(
            "cannot parse")).run(count=1)
        self.assertEqual(n, 1)
        self.assertEqual(self.rows("msgq_a", "t_dead"),
                         [("7", "0", "1", "cannot parse")])

    def test_fan_in_acks_each_on_its_own_server(self):
        # Ids 1 and 2 in both databases: four different messages.
        self.insert("msgq_a", "t_fanin", 1, 2)
        self.insert("msgq_b", "t_fanin", 1, 2)
        seen = []

        def handler(m):
            seen.append((m.server, m.id))
            if m.server == self.b and m.id == "2":
                return self.msgq.dead("b2")
            return self.msgq.ack()

        n = self.msgq.Subscriber([self.a, self.b], "t_fanin", handler).run(
            count=4)
        self.assertEqual(n, 4)
        self.assertEqual(sorted(seen), sorted(
            [(self.a, "1"), (self.a, "2"), (self.b, "1"), (self.b, "2")]))
        self.assertEqual(self.rows("msgq_a", "t_fanin"),
                         [("1", "1", "0", "-"), ("2", "1", "0", "-")])
        self.assertEqual(self.rows("msgq_b", "t_fanin"),
                         [("1", "1", "0", "-"), ("2", "0", "1", "b2")])

    def test_console_script(self):
        self.insert("msgq_b", "t_cli", 3)
        r = subprocess.run([self.env.consume_script, "--server", self.b,
                            "--count", "1", "t_cli"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Then the schema's optional columns (time_dead is never streamed).
        self.assertRegex(r.stdout, r'^\{"id":3,"message":"\{\\"n\\": 3\}",'
                         r'"time_created":[0-9]+,"last_error":null\}\n$')
        self.assertEqual(self.rows("msgq_b", "t_cli")[0][:2], ("3", "1"))
        missing = subprocess.run([self.env.consume_script, "--server", self.b,
                                  "nope"], capture_output=True, text=True,
                                 timeout=60)
        self.assertEqual(missing.returncode, 4)
        self.assertTrue(missing.stderr.startswith("msgq_consume: NOT_FOUND: "),
                        missing.stderr)


if __name__ == "__main__":
    unittest.main()
