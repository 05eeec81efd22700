"""Inbox: effectively-once processing of messages in the consumer's database.

msgq delivers at least once: a message comes again after its ack wait,
after a crash between the consumer's commit and its ack, at a lease
takeover. An Inbox makes a handler's database effects happen once per
message id anyway (the Idempotent Consumer pattern): for each message it
opens a transaction on the consumer's own MySQL/MariaDB database (any
server, not necessarily msgq's), INSERTs the message's row into the inbox
table first, runs `work(message, cursor)` in that same transaction,
commits, and only then lets the message be acked.

    import MySQLdb, msgq

    inbox = msgq.Inbox(connect=lambda: MySQLdb.connect(
                           host="billing-db", user="billing", db="billing"),
                       source="prod")

    def transfer(message, cursor):
        t = json.loads(message.get("message"))
        cursor.execute("UPDATE accounts SET balance = balance - %s "
                       "WHERE id = %s", (t["amount"], t["from"]))
        cursor.execute("UPDATE accounts SET balance = balance + %s "
                       "WHERE id = %s", (t["amount"], t["to"]))
        return msgq.ack()     # or retry(...) / dead(...): rolled back

    msgq.Subscriber("msgq:15999", "transfers",
                    inbox.handler("transfers", transfer)).run()

Outcomes of the wrapped handler:
- the inbox row exists already (processed and committed before, the ack
  was lost; or a concurrent consumer committed it while this one waited on
  its row lock): `work` is not run, the message is acked;
- `work` returns ack (or None / True) and the commit succeeds: ack;
- `work` returns retry(...) or dead(...), raises, or the commit fails: the
  transaction is rolled back (the inbox row with it) and the message is
  retried or dead as `work` said (an exception or a failed commit: retry
  with the table's backoff; a lost database connection is reconnected at
  the next message).

Not covered: effects outside this database (an email, an HTTP call) and
reads of external state; see docs/effectively-once.md. The transaction is
open while `work` runs: keep it short (well under the table's ack wait, or
heartbeat).

The inbox table (schema/msgq_inbox.sql) is created on first use with
CREATE TABLE IF NOT EXISTS when it is missing; without the CREATE privilege
that fails with an InboxError naming the grant. purge() deletes rows older
than a retention in small batches; the retention must exceed the longest
redelivery (ack wait x maximum attempts, or the table's purge time).

Works with any DB-API 2.0 MySQL driver whose errors carry the MySQL error
number as args[0] (MySQLdb/mysqlclient, PyMySQL, mysql-connector). The
connection must not be in autocommit mode (DB-API's default).

Thread-safety: an Inbox holds one connection; its handlers must be called
from one thread at a time (Subscriber does that with concurrency=1, its
default, also with several servers). Use one Inbox per consuming thread.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable, Optional

from msgq.errors import MsgqError
from msgq.message import Message
from msgq.results import (Ack, HandlerResult, Outcome, ack, outcome, retry,
                          thrown)

# MySQL/MariaDB error numbers the inbox tells apart.
ER_DUP_ENTRY = 1062
ER_NO_SUCH_TABLE = 1146
ER_TABLEACCESS_DENIED = 1142
ER_DBACCESS_DENIED = 1044
# Connection lost / gone away / can't connect: drop the connection.
_CONNECTION_ERRORS = {2002, 2003, 2006, 2013, 2055, 4031}

_NAME = re.compile(r"^[A-Za-z0-9_$]{1,64}$")

# schema/msgq_inbox.sql with the table name as %s (kept in step with it).
DDL = """CREATE TABLE IF NOT EXISTS `%s` (
  source       VARCHAR(64)    NOT NULL,
  keyspace     VARCHAR(64)    NOT NULL,
  table_name   VARCHAR(64)    NOT NULL,
  message_id   VARBINARY(255) NOT NULL,
  processed_at TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (source, keyspace, table_name, message_id),
  KEY processed_at_idx (processed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""

Work = Callable[[Message, Any], HandlerResult]


class InboxError(MsgqError):
    """The inbox table cannot be used (missing and not creatable, or a
    privilege is missing); the message says which grant or statement."""


def error_number(error: BaseException) -> Optional[int]:
    """The MySQL error number of a DB-API exception, if it carries one."""
    args = getattr(error, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    errno = getattr(error, "errno", None)
    return errno if isinstance(errno, int) else None


class Inbox:
    """Wraps handlers so that their work in the consumer's database happens
    once per message (see the module docstring).

    `connect`: returns a new DB-API connection to the consumer's database
    (called lazily, and again after the connection was lost). `source`: a
    name for the msgq deployment the messages come from (part of the key,
    so two deployments with the same table names do not collide).
    `inbox_table`: the inbox table's name. `create`: create the table when
    it is missing. `on_committed(message)` and `on_duplicate(message)`:
    called after the commit (before the ack) and for a message found in
    the inbox (tests use the first to crash between commit and ack)."""

    def __init__(self, connect: Callable[[], Any], source: str, *,
                 inbox_table: str = "msgq_inbox", create: bool = True,
                 on_committed: Optional[Callable[[Message], None]] = None,
                 on_duplicate: Optional[Callable[[Message], None]] = None
                 ) -> None:
        if not _NAME.match(inbox_table):
            raise ValueError("inbox_table %r is not a plain table name"
                             % inbox_table)
        if len(source.encode()) > 64:
            raise ValueError("source is longer than 64 bytes")
        self.connect, self.source = connect, source
        self.inbox_table, self.create = inbox_table, create
        self.on_committed, self.on_duplicate = on_committed, on_duplicate
        self.processed = 0    # messages whose work committed
        self.duplicates = 0   # messages acked without running work
        self._conn: Any = None
        self._ready = False   # the table is known to exist

    # -- setup ------------------------------------------------------------

    def connection(self) -> Any:
        """The open connection, connecting first if there is none."""
        if self._conn is None:
            self._conn = self.connect()
        return self._conn

    def close(self) -> None:
        """Closes the connection (a later use reconnects)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already gone
                pass

    def ensure_table(self) -> None:
        """Makes sure the inbox table exists, creating it when missing and
        `create`. Raises InboxError when it is missing and cannot be
        created, or cannot be read; DB-API errors for anything else."""
        if self._ready:
            return
        conn = self.connection()
        cursor = conn.cursor()
        try:
            try:
                cursor.execute("SELECT 1 FROM `%s` LIMIT 0" % self.inbox_table)
                cursor.fetchall()
            except Exception as e:
                number = error_number(e)
                if number == ER_TABLEACCESS_DENIED:
                    raise InboxError(
                        "no access to inbox table %s: GRANT SELECT, INSERT, "
                        "DELETE ON it to the consumer's user (%s)"
                        % (self.inbox_table, e)) from e
                if number != ER_NO_SUCH_TABLE:
                    raise
                if not self.create:
                    raise InboxError(
                        "inbox table %s does not exist: create it with "
                        "schema/msgq_inbox.sql" % self.inbox_table) from e
                try:
                    cursor.execute(DDL % self.inbox_table)
                except Exception as e2:
                    if error_number(e2) in (ER_TABLEACCESS_DENIED,
                                            ER_DBACCESS_DENIED):
                        raise InboxError(
                            "inbox table %s does not exist and the user may "
                            "not create it: GRANT CREATE ON the database to "
                            "the consumer's user, or run "
                            "schema/msgq_inbox.sql as an administrator (%s)"
                            % (self.inbox_table, e2)) from e2
                    raise
            conn.commit()
        finally:
            cursor.close()
        self._ready = True

    # -- handling ---------------------------------------------------------

    def handler(self, table: str, work: Work, keyspace: str = ""
                ) -> Callable[[Message], Outcome]:
        """A Subscriber handler for messages of `table` (in `keyspace`, as
        given to the Subscriber) that runs `work(message, cursor)` at most
        once per message id with effect (see the module docstring)."""
        def handle(message: Message) -> Outcome:
            return self.process(table, keyspace, message, work)
        return handle

    def process(self, table: str, keyspace: str, message: Message,
                work: Work) -> Outcome:
        """Handles one message (what handler() calls); returns its outcome.
        Never raises for a failure of `work` or of the database: those are
        retries (reported on stderr)."""
        try:
            self.ensure_table()
            conn = self.connection()
        except Exception as e:
            self._after_error(e)
            print("msgq.inbox: %s" % e, file=sys.stderr)
            return thrown(e)
        cursor = conn.cursor()
        try:
            try:
                cursor.execute(
                    "INSERT INTO `%s` (source, keyspace, table_name, "
                    "message_id) VALUES (%%s, %%s, %%s, %%s)"
                    % self.inbox_table,
                    (self.source, keyspace, table, message.raw_id))
            except Exception as e:
                self._rollback(conn)
                if error_number(e) == ER_DUP_ENTRY:
                    self.duplicates += 1
                    if self.on_duplicate:
                        self.on_duplicate(message)
                    return ack()
                raise
            try:
                result = outcome(work(message, cursor))
            except Exception as e:  # work failed: undo it and retry
                self._rollback(conn)
                print("msgq.inbox: handler failed: %r" % e, file=sys.stderr)
                return thrown(e)
            if not isinstance(result, Ack):
                self._rollback(conn)
                return result
            conn.commit()
        except Exception as e:  # the database failed (INSERT or COMMIT)
            self._rollback(conn)
            self._after_error(e)
            print("msgq.inbox: %r" % e, file=sys.stderr)
            return retry(reason="inbox: %s" % (str(e) or repr(e)))
        finally:
            try:
                cursor.close()
            except Exception:
                pass
        self.processed += 1
        if self.on_committed:
            self.on_committed(message)
        return ack()

    def _rollback(self, conn: Any) -> None:
        try:
            conn.rollback()
        except Exception as e:  # the connection is gone: reconnect later
            self._after_error(e)
            self.close()

    def _after_error(self, error: BaseException) -> None:
        number = error_number(error)
        if number is None or number in _CONNECTION_ERRORS or number >= 2000:
            self.close()

    # -- retention --------------------------------------------------------

    def purge(self, retention: float, batch: int = 1000,
              pause: float = 0.0) -> int:
        """Deletes inbox rows processed more than `retention` seconds ago
        (by the database's clock), `batch` rows per statement and
        transaction, until none is left; returns the number deleted.
        `pause`: seconds to sleep between batches (to spare a busy
        server). The retention must exceed the longest time a message can
        be redelivered (docs/effectively-once.md). Raises ValueError for a
        retention or batch that is not positive, DB-API errors otherwise."""
        if not retention > 0:
            raise ValueError("retention must be positive, got %r" % retention)
        if batch <= 0:
            raise ValueError("batch must be positive, got %r" % batch)
        self.ensure_table()
        conn = self.connection()
        micros = int(retention * 1e6)
        deleted = 0
        while True:
            cursor = conn.cursor()
            try:
                cursor.execute(
                    "DELETE FROM `%s` WHERE processed_at < "
                    "NOW(6) - INTERVAL %d MICROSECOND "
                    "ORDER BY processed_at LIMIT %d"
                    % (self.inbox_table, micros, batch))
                n = cursor.rowcount
                conn.commit()
            except Exception:
                self._rollback(conn)
                raise
            finally:
                cursor.close()
            deleted += n
            if n < batch:
                return deleted
            if pause > 0:
                time.sleep(pause)
