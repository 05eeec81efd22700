package msgq

// Fixtures of the inbox tests: a second private MariaDB as the consumer's
// database (msgq's is the harness's shared one), the bank the consumer
// moves money in, and consumer processes: this test binary run again with
// -test.run=^TestInboxConsumerProcess$ and MSGQ_INBOX_* variables (see
// runInboxConsumer). A consumer appends one line per event to its events
// file with one write each, so a kill -9 loses no line written: "run ID"
// when the work starts, "commit ID" after the commit, "dup ID" for a
// message found in the inbox.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

var consumerDB struct {
	once   sync.Once
	err    error
	dir    string
	socket string
}

// consumerSocket starts the consumer's MariaDB on first use and returns its
// socket. It is stopped with the harness's cleanup.
func consumerSocket(t testing.TB) string {
	t.Helper()
	integration(t)
	consumerDB.once.Do(func() {
		env.mu.Lock()
		dir := filepath.Join(env.tmp, "consumer-mariadb")
		env.mu.Unlock()
		consumerDB.dir = dir
		out, err := exec.Command(filepath.Join(env.src, "tools/mariadb-private"), "start", dir,
			"--owner-pid="+strconv.Itoa(os.Getpid())).Output()
		env.mu.Lock()
		atCleanup = append(atCleanup, func() {
			exec.Command(filepath.Join(env.src, "tools/mariadb-private"), "stop", dir, "--kill").Run()
		})
		env.mu.Unlock()
		if err != nil {
			consumerDB.err = fmt.Errorf("mariadb-private start (consumer): %v\n%s", err, stderrOf(err))
			return
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v := strings.TrimPrefix(line, "MSGQ_MYSQL_SOCKET="); v != line {
				consumerDB.socket = strings.TrimSpace(v)
			}
		}
		if consumerDB.socket == "" {
			consumerDB.err = fmt.Errorf("no MSGQ_MYSQL_SOCKET in %q", out)
		}
	})
	if consumerDB.err != nil {
		t.Fatal(consumerDB.err)
	}
	return consumerDB.socket
}

// openDB opens database db on the MariaDB at socket as user (root: no
// password). Closed when the test ends.
func openDB(t testing.TB, socket, user, password, db string) *sql.DB {
	t.Helper()
	cred := user
	if password != "" {
		cred += ":" + password
	}
	h, err := sql.Open("mysql", fmt.Sprintf("%s@unix(%s)/%s", cred, socket, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func mustExec(t testing.TB, db *sql.DB, stmt string, args ...interface{}) {
	t.Helper()
	if _, err := db.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func queryInt(t testing.TB, db *sql.DB, stmt string, args ...interface{}) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(stmt, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return n
}

var bankSeq int64

// newBank creates a database of the test's own on the consumer's MariaDB
// with accounts 1 (opening) and 2 (0), and applied (one row per message
// applied, with a counter: more than 1 is a message applied twice).
// Returns its name and a root handle on it.
func newBank(t testing.TB, opening int64) (string, *sql.DB) {
	t.Helper()
	socket := consumerSocket(t)
	env.mu.Lock()
	bankSeq++
	name := fmt.Sprintf("bank%d", bankSeq)
	env.mu.Unlock()
	root := openDB(t, socket, "root", "", "")
	mustExec(t, root, "CREATE DATABASE "+name)
	db := openDB(t, socket, "root", "", name)
	mustExec(t, db, "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)")
	mustExec(t, db, "CREATE TABLE applied (message_id bigint PRIMARY KEY, times int NOT NULL)")
	mustExec(t, db, "INSERT INTO accounts VALUES (1, ?), (2, 0)", opening)
	return name, db
}

func balances(t testing.TB, db *sql.DB) [2]int64 {
	t.Helper()
	return [2]int64{
		queryInt(t, db, "SELECT balance FROM accounts WHERE id = 1"),
		queryInt(t, db, "SELECT balance FROM accounts WHERE id = 2"),
	}
}

// applied returns message id -> times applied.
func appliedCounts(t testing.TB, db *sql.DB) map[int64]int64 {
	t.Helper()
	rows, err := db.Query("SELECT message_id, times FROM applied")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	return out
}

func inboxIDs(t testing.TB, db *sql.DB, table string) []int {
	t.Helper()
	rows, err := db.Query("SELECT message_id FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(string(b))
		ids = append(ids, n)
	}
	sort.Ints(ids)
	return ids
}

// transfer is the consumer's work: moves the message's amount from
// account "from" to "to", and counts the application in applied.
func transfer(ctx context.Context, m *Message, tx *sql.Tx) Result {
	var t struct{ From, To, Amount int64 }
	if err := json.Unmarshal(m.Raw("message"), &t); err != nil {
		return Dead("bad transfer: " + err.Error())
	}
	for _, s := range []struct {
		stmt string
		args []interface{}
	}{
		{"UPDATE accounts SET balance = balance - ? WHERE id = ?", []interface{}{t.Amount, t.From}},
		{"UPDATE accounts SET balance = balance + ? WHERE id = ?", []interface{}{t.Amount, t.To}},
		{"INSERT INTO applied VALUES (?, 1) ON DUPLICATE KEY UPDATE times = times + 1", []interface{}{m.ID()}},
	} {
		if _, err := tx.ExecContext(ctx, s.stmt, s.args...); err != nil {
			return Fail(err)
		}
	}
	return Ack()
}

// insertTransfers enqueues ids from..to, each moving id from 1 to 2.
func insertTransfers(t testing.TB, db, table string, from, to int) {
	t.Helper()
	var vals []string
	for i := from; i <= to; i++ {
		vals = append(vals, fmt.Sprintf(`(%d, '{"from": 1, "to": 2, "amount": %d}')`, i, i))
	}
	sqlExec(t, fmt.Sprintf("INSERT INTO %s.%s (id, message) VALUES %s", db, table, strings.Join(vals, ",")))
}

func readEvents(path string) [][2]string {
	b, _ := os.ReadFile(path)
	var out [][2]string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasSuffix(line, "\n") {
			continue // a torn last line
		}
		f := strings.Fields(line)
		if len(f) == 2 {
			out = append(out, [2]string{f[0], f[1]})
		}
	}
	return out
}

func hasEvent(path, what, id string) bool {
	for _, e := range readEvents(path) {
		if e == [2]string{what, id} {
			return true
		}
	}
	return false
}

// consumerConfig is what a consumer process is told (as MSGQ_INBOX_*).
type consumerConfig struct {
	msgqd      string // msgqd's address
	keyspace   string // msgq's database
	table      string
	bankSocket string
	bank       string // the consumer's database
	events     string
	crash      float64 // probability of SIGKILLing itself right after a commit
	seed       int64
	workDelay  time.Duration // the work sleeps up to this long
	holdFile   string        // the work waits before its commit until this exists
	leave      bool          // stop the stream when the work starts; exit after one message
}

type consumerProc struct {
	cmd    *exec.Cmd
	events string
	done   chan struct{}
}

// startConsumer runs a consumer process; it is killed when the test ends.
func startConsumer(t testing.TB, c consumerConfig) *consumerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInboxConsumerProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(),
		"MSGQ_INBOX_CONSUMER=1",
		"MSGQ_INBOX_MSGQD="+c.msgqd,
		"MSGQ_INBOX_KEYSPACE="+c.keyspace,
		"MSGQ_INBOX_TABLE="+c.table,
		"MSGQ_INBOX_BANK_SOCKET="+c.bankSocket,
		"MSGQ_INBOX_BANK="+c.bank,
		"MSGQ_INBOX_EVENTS="+c.events,
		fmt.Sprintf("MSGQ_INBOX_CRASH=%g", c.crash),
		fmt.Sprintf("MSGQ_INBOX_SEED=%d", c.seed),
		"MSGQ_INBOX_WORK_DELAY="+c.workDelay.String(),
		"MSGQ_INBOX_HOLD="+c.holdFile,
		fmt.Sprintf("MSGQ_INBOX_LEAVE=%t", c.leave),
	)
	logFile, err := os.OpenFile(c.events+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start consumer: %v", err)
	}
	p := &consumerProc{cmd: cmd, events: c.events, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *consumerProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *consumerProc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// killedItself: the process ended by SIGKILL (its own, when the test did
// not kill it).
func (p *consumerProc) killedBySignal() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestInboxConsumerProcess is the consumer process's main (skipped unless
// MSGQ_INBOX_CONSUMER=1): a Subscriber whose handler is an Inbox running
// transfer, until it is killed (or, with MSGQ_INBOX_LEAVE, after one
// message).
func TestInboxConsumerProcess(t *testing.T) {
	if os.Getenv("MSGQ_INBOX_CONSUMER") != "1" {
		t.Skip("the inbox tests' consumer process")
	}
	if err := runInboxConsumer(); err != nil {
		fmt.Fprintf(os.Stderr, "consumer: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runInboxConsumer() error {
	get := os.Getenv
	crash, _ := strconv.ParseFloat(get("MSGQ_INBOX_CRASH"), 64)
	seed, _ := strconv.ParseInt(get("MSGQ_INBOX_SEED"), 10, 64)
	workDelay, _ := time.ParseDuration(get("MSGQ_INBOX_WORK_DELAY"))
	hold, leave := get("MSGQ_INBOX_HOLD"), get("MSGQ_INBOX_LEAVE") == "true"
	rng := rand.New(rand.NewSource(seed))
	var rngMu sync.Mutex
	random := func() float64 {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.Float64()
	}
	events, err := os.OpenFile(get("MSGQ_INBOX_EVENTS"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logEvent := func(what string, m *Message) { events.WriteString(what + " " + m.ID() + "\n") }
	db, err := sql.Open("mysql", fmt.Sprintf("root@unix(%s)/%s", get("MSGQ_INBOX_BANK_SOCKET"), get("MSGQ_INBOX_BANK")))
	if err != nil {
		return err
	}
	table := Table{Keyspace: get("MSGQ_INBOX_KEYSPACE"), Name: get("MSGQ_INBOX_TABLE")}
	inbox, err := NewInbox(db, InboxOptions{
		Source: "test",
		OnCommitted: func(m *Message) {
			logEvent("commit", m)
			if random() < crash {
				syscall.Kill(os.Getpid(), syscall.SIGKILL) // between the commit and the ack
			}
		},
		OnDuplicate: func(m *Message) { logEvent("dup", m) },
	})
	if err != nil {
		return err
	}
	ctx, leaveMsgqd := context.WithCancel(context.Background())
	defer leaveMsgqd()
	handler := inbox.Handler(table, func(ctx context.Context, m *Message, tx *sql.Tx) Result {
		logEvent("run", m)
		if leave {
			// Leaves msgqd, so that the message's next send goes to another
			// consumer; the work then holds and commits, and Run drains.
			leaveMsgqd()
		}
		r := transfer(ctx, m, tx)
		if workDelay > 0 {
			time.Sleep(time.Duration(random() * float64(workDelay)))
		}
		for hold != "" {
			if _, err := os.Stat(hold); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return r
	})
	opts := Options{
		Concurrency: 2,
		NoTracing:   true,
		Backoff:     BackoffOptions{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond},
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond},
			MinConnectTimeout: 5 * time.Second,
		})},
		AckBatch: AckBatchOptions{MaxDelay: 20 * time.Millisecond},
	}
	if leave {
		opts.Concurrency = 1
		opts.Heartbeat.MaxExtension = -1     // let the message go to the other consumer
		opts.DrainTimeout = 60 * time.Second // the work holds until the test says
	}
	sub, err := NewSubscriber([]string{get("MSGQ_INBOX_MSGQD")}, table, handler, opts)
	if err != nil {
		return err
	}
	// Until killed, a fatal error, or (leave) the first message handled.
	return sub.Run(ctx)
}
