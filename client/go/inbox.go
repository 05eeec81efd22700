package msgq

// Inbox: effectively-once processing of messages in the consumer's own
// MySQL/MariaDB database (docs/effectively-once.md), with database/sql and
// github.com/go-sql-driver/mysql (Debian's
// golang-github-go-sql-driver-mysql-dev).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQL/MariaDB error numbers the inbox tells apart.
const (
	erDupEntry          = 1062
	erNoSuchTable       = 1146
	erTableAccessDenied = 1142
	erDBAccessDenied    = 1044
)

var inboxTableName = regexp.MustCompile(`^[A-Za-z0-9_$]{1,64}$`)

// InboxDDL is schema/msgq_inbox.sql with the table's name as %s (kept in
// step with it and with the Python and Node helpers).
const InboxDDL = "CREATE TABLE IF NOT EXISTS `%s` (\n" +
	"  source       VARCHAR(64)    NOT NULL,\n" +
	"  keyspace     VARCHAR(64)    NOT NULL,\n" +
	"  table_name   VARCHAR(64)    NOT NULL,\n" +
	"  message_id   VARBINARY(255) NOT NULL,\n" +
	"  processed_at TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n" +
	"  PRIMARY KEY (source, keyspace, table_name, message_id),\n" +
	"  KEY processed_at_idx (processed_at)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

// InboxError says the inbox table cannot be used: it is missing and may not
// be created, or a privilege on it is missing. Its text names the grant or
// the statement needed. Err is the database's error.
type InboxError struct {
	Msg string
	Err error
}

func (e *InboxError) Error() string { return e.Msg }
func (e *InboxError) Unwrap() error { return e.Err }

// InboxWork is a handler's work inside the inbox's transaction: everything
// it writes through tx commits together with the message's inbox row, or
// not at all. Its Result decides: Ack commits (then the message is acked);
// Retry, RetryBackoff, Fail(err) with an error and Dead roll back and
// settle the message so. It must not Commit or Rollback tx itself. A panic
// rolls back and retries with the table's backoff (the Subscriber recovers
// it).
type InboxWork func(ctx context.Context, m *Message, tx *sql.Tx) Result

// InboxOptions configure an Inbox.
type InboxOptions struct {
	// Names the msgq deployment the messages come from (at most 64 bytes);
	// part of the key, so two deployments with the same table names and ids
	// do not collide in one inbox. Required.
	Source string
	// The inbox table's name (a plain name, no quoting); default
	// "msgq_inbox".
	InboxTable string
	// Never create the table: a missing table is an InboxError.
	NoCreate bool
	// Called after the commit and before the result goes back to the
	// Subscriber (tests use it to crash between the commit and the ack).
	OnCommitted func(m *Message)
	// Called for a message found in the inbox (acked without running work).
	OnDuplicate func(m *Message)
	// Failures of the work or of the database (each also a retry); nil =
	// log.Printf.
	Logf func(format string, args ...interface{})
}

// InboxStats count an Inbox's outcomes since NewInbox.
type InboxStats struct {
	Processed  int64 // messages whose work committed
	Duplicates int64 // messages acked without running work
}

// Inbox wraps Subscriber handlers so that their work in the consumer's
// database happens once per message (the Idempotent Consumer pattern). For
// each message the wrapped handler begins a transaction on db (any MySQL or
// MariaDB server, not necessarily msgq's), INSERTs (source, keyspace,
// table, id) into the inbox table first, runs the work in that
// transaction, commits, and only then returns Ack. When the row exists
// already (processed and committed before, its ack was lost; or a
// concurrent consumer committed it while this one waited on its row lock),
// the work does not run and the result is Ack. When the work returns
// anything but Ack or panics, or the commit fails, the transaction rolls
// back, the inbox row with it, and the result is the work's (a database
// error: RetryBackoff("inbox: ...")).
//
//	db, _ := sql.Open("mysql", "billing@tcp(billing-db:3306)/billing")
//	inbox, err := msgq.NewInbox(db, msgq.InboxOptions{Source: "prod"})
//	handler := inbox.Handler(msgq.Table{Name: "transfers"},
//		func(ctx context.Context, m *msgq.Message, tx *sql.Tx) msgq.Result {
//			var t transfer
//			if err := json.Unmarshal(m.Raw("message"), &t); err != nil {
//				return msgq.Dead(err.Error())
//			}
//			_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance - ? WHERE id = ?", t.Amount, t.From)
//			...
//			return msgq.Fail(err) // nil: Ack, committed; an error: rolled back, retried
//		})
//	sub, err := msgq.NewSubscriber(servers, msgq.Table{Name: "transfers"}, handler, msgq.Options{})
//	err = sub.Run(ctx)
//
// The inbox table (schema/msgq_inbox.sql) is created on first use when it
// is missing and the user may (CREATE TABLE IF NOT EXISTS); otherwise the
// message is retried with an InboxError naming the missing grant. Purge
// deletes rows older than a retention in small batches.
//
// Not covered: effects outside db (an email, an HTTP call) and reads of
// external state; see docs/effectively-once.md. The transaction is open
// while the work runs: keep it well under the table's ack wait (the
// Subscriber's heartbeat extends a slow one).
//
// Safe for concurrent use: each message takes its own connection from db's
// pool, so a Subscriber with Options.Concurrency > 1 works on one Inbox.
// database/sql reconnects after a lost connection.
type Inbox struct {
	// Constant after construction.
	db     *sql.DB
	o      InboxOptions
	insert string

	readyMu sync.Mutex
	ready   bool // the table is known to exist; guarded by readyMu

	processed  int64 // atomic
	duplicates int64 // atomic
}

// NewInbox returns an Inbox over db. It does not touch the database (the
// table is checked at the first message, or by EnsureTable). Fails when
// Source is empty or longer than 64 bytes, or InboxTable is not a plain
// table name.
func NewInbox(db *sql.DB, o InboxOptions) (*Inbox, error) {
	if db == nil {
		return nil, errors.New("msgq: NewInbox needs a *sql.DB")
	}
	if o.Source == "" || len(o.Source) > 64 {
		return nil, fmt.Errorf("msgq: inbox source must be 1 to 64 bytes, got %q", o.Source)
	}
	if o.InboxTable == "" {
		o.InboxTable = "msgq_inbox"
	}
	if !inboxTableName.MatchString(o.InboxTable) {
		return nil, fmt.Errorf("msgq: inbox table %q is not a plain table name", o.InboxTable)
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return &Inbox{
		db: db, o: o,
		insert: "INSERT INTO `" + o.InboxTable + "` (source, keyspace, table_name, message_id) VALUES (?, ?, ?, ?)",
	}, nil
}

// Stats returns the counters since NewInbox.
func (in *Inbox) Stats() InboxStats {
	return InboxStats{Processed: atomic.LoadInt64(&in.processed), Duplicates: atomic.LoadInt64(&in.duplicates)}
}

// mysqlErrno is the MySQL error number of err, or 0.
func mysqlErrno(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// EnsureTable makes sure the inbox table exists, creating it when missing
// (unless NoCreate). Returns an *InboxError when it is missing and cannot be
// created, or cannot be read; the database's error otherwise.
func (in *Inbox) EnsureTable(ctx context.Context) error {
	in.readyMu.Lock()
	ready := in.ready
	in.readyMu.Unlock()
	if ready {
		return nil
	}
	t := in.o.InboxTable
	rows, err := in.db.QueryContext(ctx, "SELECT 1 FROM `"+t+"` LIMIT 0")
	if err == nil {
		rows.Close()
	} else {
		switch mysqlErrno(err) {
		case erTableAccessDenied:
			return &InboxError{Err: err, Msg: fmt.Sprintf("no access to inbox table %s: GRANT SELECT, INSERT, "+
				"DELETE ON it to the consumer's user (%v)", t, err)}
		case erNoSuchTable:
		default:
			return err
		}
		if in.o.NoCreate {
			return &InboxError{Err: err, Msg: fmt.Sprintf("inbox table %s does not exist: create it with "+
				"schema/msgq_inbox.sql", t)}
		}
		if _, err := in.db.ExecContext(ctx, fmt.Sprintf(InboxDDL, t)); err != nil {
			if n := mysqlErrno(err); n == erTableAccessDenied || n == erDBAccessDenied {
				return &InboxError{Err: err, Msg: fmt.Sprintf("inbox table %s does not exist and the user may "+
					"not create it: GRANT CREATE ON the database to the consumer's user, or run "+
					"schema/msgq_inbox.sql as an administrator (%v)", t, err)}
			}
			return err
		}
	}
	in.readyMu.Lock()
	in.ready = true
	in.readyMu.Unlock()
	return nil
}

// Handler returns a Subscriber handler for the messages of table (with
// the keyspace given to the Subscriber) that runs work with effect at most
// once per message id (see Inbox).
func (in *Inbox) Handler(table Table, work InboxWork) Handler {
	return func(ctx context.Context, m *Message) Result { return in.Process(ctx, table, m, work) }
}

// Process handles one message of table (what Handler's handler calls) and
// returns its result. A failure of the work or of the database is a retry
// (logged with Logf), never an error.
func (in *Inbox) Process(ctx context.Context, table Table, m *Message, work InboxWork) Result {
	if err := in.EnsureTable(ctx); err != nil {
		in.o.Logf("msgq inbox: %v", err)
		return Fail(err)
	}
	tx, err := in.db.BeginTx(ctx, nil)
	if err != nil {
		return in.dbFailed(err)
	}
	// Rolls back on every path but a commit, a panicking work included
	// (no-op after Commit).
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, in.insert, in.o.Source, table.Keyspace, table.Name, []byte(m.ID())); err != nil {
		if mysqlErrno(err) == erDupEntry {
			tx.Rollback()
			atomic.AddInt64(&in.duplicates, 1)
			if in.o.OnDuplicate != nil {
				in.o.OnDuplicate(m)
			}
			return Ack()
		}
		return in.dbFailed(err)
	}
	result := work(ctx, m, tx)
	if result.Kind() != KindAck {
		if err := result.Err(); err != nil {
			in.o.Logf("msgq inbox: work failed: %v", err)
		}
		return result
	}
	if err := tx.Commit(); err != nil {
		return in.dbFailed(err)
	}
	atomic.AddInt64(&in.processed, 1)
	if in.o.OnCommitted != nil {
		in.o.OnCommitted(m)
	}
	return Ack()
}

func (in *Inbox) dbFailed(err error) Result {
	in.o.Logf("msgq inbox: %v", err)
	r := RetryBackoff("inbox: " + err.Error())
	r.err = err
	return r
}

// PurgeOptions tune Inbox.Purge. Zero fields take the defaults.
type PurgeOptions struct {
	// Rows per DELETE (and transaction); default 1000.
	Batch int
	// Sleep between batches, to spare a busy server; default none.
	Pause time.Duration
}

// Purge deletes inbox rows processed more than retention ago (by the
// database's clock, NOW(6)), Batch rows per statement, until none is left,
// and returns the number deleted. The retention must exceed the longest
// time a message can be redelivered (docs/effectively-once.md); a purged id
// that comes again is processed again. Run it from a periodic job. Fails
// for a retention below one microsecond or a negative Batch; returns the
// database's error (and the rows deleted until then) otherwise.
func (in *Inbox) Purge(ctx context.Context, retention time.Duration, o PurgeOptions) (int64, error) {
	if retention < time.Microsecond {
		return 0, fmt.Errorf("msgq: purge retention must be positive, got %v", retention)
	}
	if o.Batch < 0 {
		return 0, fmt.Errorf("msgq: purge batch must be positive, got %d", o.Batch)
	}
	if o.Batch == 0 {
		o.Batch = 1000
	}
	if err := in.EnsureTable(ctx); err != nil {
		return 0, err
	}
	stmt := fmt.Sprintf("DELETE FROM `%s` WHERE processed_at < NOW(6) - INTERVAL %d MICROSECOND "+
		"ORDER BY processed_at LIMIT %d", in.o.InboxTable, retention.Microseconds(), o.Batch)
	var deleted int64
	for {
		res, err := in.db.ExecContext(ctx, stmt) // autocommit: one transaction per batch
		if err != nil {
			return deleted, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return deleted, err
		}
		deleted += n
		if n < int64(o.Batch) {
			return deleted, nil
		}
		if o.Pause > 0 {
			select {
			case <-time.After(o.Pause):
			case <-ctx.Done():
				return deleted, ctx.Err()
			}
		}
	}
}
