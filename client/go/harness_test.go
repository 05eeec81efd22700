package msgq

// The integration harness: one private MariaDB for the whole test binary
// (tools/mariadb-private, tied to this process by --owner-pid), a database
// per test, and msgqd processes the tests start (env MSGQD, default the
// checkout's build/server/msgqd). Everything is cleaned up when the tests
// end, fail, or run out of -timeout (a watchdog cleans up shortly before go
// test's own timeout would kill the binary).
//
// Without msgqd a plain `go test ./...` skips the integration tests and runs
// the rest; run_tests.sh (and so ctest) sets MSGQ_GO_INTEGRATION=1, which
// turns that skip into a failure.

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var env struct {
	src    string // the checkout (tools/, schema/)
	msgqd  string
	tmp    string // everything the tests write
	dbDir  string
	socket string

	mu     sync.Mutex
	procs  map[*msgqdProc]bool // running msgqd, killed at exit
	nextDB int
}

// atCleanup runs at the end, before the temporary directory goes (e.g. the
// inbox tests' second MariaDB). Guarded by env.mu.
var atCleanup []func()

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

var cleanupOnce sync.Once

func cleanup() {
	cleanupOnce.Do(func() {
		env.mu.Lock()
		procs := env.procs
		env.procs = nil
		env.mu.Unlock()
		for p := range procs {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		if env.socket != "" {
			exec.Command(filepath.Join(env.src, "tools/mariadb-private"), "stop", env.dbDir, "--kill").Run()
		}
		env.mu.Lock()
		hooks := atCleanup
		env.mu.Unlock()
		for _, f := range hooks {
			f()
		}
		env.mu.Lock()
		tmp := env.tmp
		env.mu.Unlock()
		if tmp != "" && os.Getenv("MSGQ_GO_KEEP_TMP") == "" {
			os.RemoveAll(tmp)
		}
	})
}

func runTests(m *testing.M) int {
	env.src = os.Getenv("MSGQ_SOURCE_DIR")
	if env.src == "" {
		env.src, _ = filepath.Abs(filepath.Join("..", "..")) // go test runs in client/go
	}
	env.msgqd = os.Getenv("MSGQD")
	if env.msgqd == "" {
		env.msgqd = filepath.Join(env.src, "build", "server", "msgqd")
	}
	env.procs = map[*msgqdProc]bool{}
	defer cleanup()

	// Signals and go test's -timeout (which kills without running defers).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "msgq go tests: %v: cleaning up\n", s)
		cleanup()
		os.Exit(2)
	}()
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 10*time.Second {
			time.AfterFunc(d-5*time.Second, func() {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				fmt.Fprintf(os.Stderr, "msgq go tests: about to time out; cleaning up. Goroutines:\n%s\n", buf[:n])
				cleanup()
				os.Exit(2)
			})
		}
	}
	return m.Run()
}

var (
	setupOnce sync.Once
	setupErr  error
)

// integration starts the shared MariaDB on first use. Without msgqd it
// skips the test, or fails it when MSGQ_GO_INTEGRATION=1; a failed setup
// fails it.
func integration(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(env.msgqd); err != nil {
		if os.Getenv("MSGQ_GO_INTEGRATION") == "1" {
			t.Fatalf("msgqd not found: %v", err)
		}
		t.Skipf("integration test: no msgqd (%v); set MSGQD or build build/server/msgqd", err)
	}
	setupOnce.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

func setup() error {
	tmp, err := os.MkdirTemp("", "msgq-go-test-")
	if err != nil {
		return err
	}
	env.mu.Lock()
	env.tmp = tmp
	env.mu.Unlock()
	if os.Getenv("MSGQ_GO_KEEP_TMP") == "" {
		// A panicking test ends the binary without running cleanup(): then
		// this watcher removes the directory (mariadb-private's watchdog
		// kills the server, Pdeathsig the msgqd processes).
		w := exec.Command("setsid", "bash", "-c",
			`tail --pid="$1" -f /dev/null 2>/dev/null; sleep 2; rm -rf -- "$2"`,
			"msgq-go-test-cleanup", strconv.Itoa(os.Getpid()), tmp)
		if err := w.Start(); err != nil {
			return fmt.Errorf("start the cleanup watcher: %v", err)
		}
		go w.Wait()
	}
	dbDir := filepath.Join(tmp, "mariadb")
	out, err := exec.Command(filepath.Join(env.src, "tools/mariadb-private"), "start", dbDir,
		"--owner-pid="+strconv.Itoa(os.Getpid())).Output()
	env.dbDir = dbDir
	if err != nil {
		// It may have started before failing: stop it all the same.
		env.socket = filepath.Join(dbDir, "mysqld.sock")
		return fmt.Errorf("mariadb-private start: %v\n%s", err, stderrOf(err))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v := strings.TrimPrefix(line, "MSGQ_MYSQL_SOCKET="); v != line {
			env.socket = strings.TrimSpace(v)
		}
	}
	if env.socket == "" {
		env.socket = filepath.Join(dbDir, "mysqld.sock")
		return fmt.Errorf("no MSGQ_MYSQL_SOCKET in %q", out)
	}
	return nil
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// sqlExec runs statements through the mariadb CLI and returns its
// tab-separated output without headers.
func sqlExec(t testing.TB, sql string) string {
	t.Helper()
	cmd := exec.Command("mariadb", "--socket="+env.socket, "-uroot", "-N", "-B", "-e", sql)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mariadb %q: %v: %s", sql, err, stderr.String())
	}
	return strings.TrimRight(string(out), "\n")
}

func sqlInt(t testing.TB, sql string) int64 {
	t.Helper()
	s := sqlExec(t, sql)
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("%q: not a number: %q", sql, s)
	}
	return n
}

// newDatabase creates a database of the test's own.
func newDatabase(t testing.TB) string {
	t.Helper()
	integration(t)
	env.mu.Lock()
	env.nextDB++
	name := fmt.Sprintf("go%d", env.nextDB)
	env.mu.Unlock()
	sqlExec(t, "CREATE DATABASE "+name)
	return name
}

// createTable makes a message table db.name (as tests/test_env.cc's
// MessageTableDdl) with the dead-letter columns (time_created, time_dead,
// last_error), extra columns, and the comment's directives over short
// test defaults.
func createTable(t testing.TB, db, name, overrides, extra string) {
	t.Helper()
	directives := [][2]string{
		{"vt_ack_wait", "30"}, {"vt_purge_after", "86400"}, {"vt_batch_size", "10"},
		{"vt_cache_size", "10000"}, {"vt_poller_interval", "0.5"},
	}
	for _, kv := range strings.Split(overrides, ",") {
		if kv == "" {
			continue
		}
		p := strings.SplitN(kv, "=", 2)
		replaced := false
		for i := range directives {
			if directives[i][0] == p[0] {
				directives[i][1] = p[1]
				replaced = true
			}
		}
		if !replaced {
			directives = append(directives, [2]string{p[0], p[1]})
		}
	}
	comment := "vitess_message"
	for _, d := range directives {
		comment += "," + d[0] + "=" + d[1]
	}
	if extra != "" {
		extra += ", "
	}
	sqlExec(t, fmt.Sprintf("CREATE TABLE %s.%s (id bigint NOT NULL, priority tinyint NOT NULL DEFAULT 50, "+
		"epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, "+
		"message json, time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000), "+
		"time_dead bigint DEFAULT NULL, last_error varchar(1024) DEFAULT NULL, %s"+
		"PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) COMMENT '%s'",
		db, name, extra, comment))
}

// insertRange enqueues ids from..to with message {"n": id}.
func insertRange(t testing.TB, db, table string, from, to int) {
	t.Helper()
	var vals []string
	for i := from; i <= to; i++ {
		vals = append(vals, fmt.Sprintf(`(%d, '{"n": %d}')`, i, i))
	}
	sqlExec(t, fmt.Sprintf("INSERT INTO %s.%s (id, message) VALUES %s", db, table, strings.Join(vals, ",")))
}

type msgqdProc struct {
	cmd  *exec.Cmd
	addr string
	log  string
	args []string
	done chan struct{}
}

// startMsgqd starts msgqd serving databases (comma-separated) on listen
// ("127.0.0.1:0" = any port) and waits for "msgqd listening on". The process
// is killed when the test ends.
func startMsgqd(t testing.TB, databases, listen string, extra ...string) *msgqdProc {
	t.Helper()
	args := append([]string{
		"--mysql_socket=" + env.socket,
		"--listen=" + listen,
		"--http_listen=",
		"--mysql_protocol_listen=",
		"--databases=" + databases,
		"--schema_reload_interval=200ms",
	}, extra...)
	p := launch(t, args)
	t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	return p
}

var logSeq int64

func launch(t testing.TB, args []string) *msgqdProc {
	t.Helper()
	env.mu.Lock()
	logSeq++
	logPath := filepath.Join(env.tmp, fmt.Sprintf("msgqd-%d.log", logSeq))
	env.mu.Unlock()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(env.msgqd, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Dies with the test binary, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start msgqd: %v", err)
	}
	p := &msgqdProc{cmd: cmd, log: logPath, args: args, done: make(chan struct{})}
	env.mu.Lock()
	env.procs[p] = true
	env.mu.Unlock()
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if addr := listeningAddr(logPath); addr != "" {
			p.addr = addr
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("msgqd exited before listening: %s", tail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.stop(syscall.SIGKILL)
	t.Fatalf("msgqd did not start listening: %s", tail(logPath))
	return nil
}

func listeningAddr(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if a := strings.TrimPrefix(sc.Text(), "msgqd listening on "); a != sc.Text() {
			return strings.TrimSpace(a)
		}
	}
	return ""
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// stop sends sig and waits for the process (SIGKILL after 20s).
func (p *msgqdProc) stop(sig syscall.Signal) {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	env.mu.Lock()
	delete(env.procs, p)
	env.mu.Unlock()
}

// restart stops p with sig and starts msgqd again with the same flags on
// the same address.
func (p *msgqdProc) restart(t testing.TB, sig syscall.Signal) *msgqdProc {
	t.Helper()
	p.stop(sig)
	args := append([]string(nil), p.args...)
	for i, a := range args {
		if strings.HasPrefix(a, "--listen=") {
			args[i] = "--listen=" + p.addr
		}
	}
	var q *msgqdProc
	// The port was just released; retry a moment if it is not free yet.
	for attempt := 0; ; attempt++ {
		if ln, err := net.Listen("tcp", p.addr); err == nil {
			ln.Close()
		} else if attempt < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		q = launch(t, args)
		break
	}
	t.Cleanup(func() { q.stop(syscall.SIGKILL) })
	return q
}

// eventually polls cond every 50ms until it holds or timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runningSub is a Subscriber whose Run runs on its own goroutine.
type runningSub struct {
	*Subscriber
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result, once done is closed
}

// subscribe makes a Subscriber (NewSubscriber) and starts its Run; the
// test ends it with closeSub.
func subscribe(servers []string, table Table, handler Handler, opts Options) (*runningSub, error) {
	s, err := NewSubscriber(servers, table, handler, opts)
	if err != nil {
		return nil, err
	}
	return run(s), nil
}

func run(s *Subscriber) *runningSub {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningSub{Subscriber: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = r.Run(ctx)
	}()
	return r
}

// Done is closed when Run returned (Err says with what).
func (r *runningSub) Done() <-chan struct{} { return r.done }

// Err is Run's result, once Done is closed.
func (r *runningSub) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// stop cancels Run's context and waits (60s at most) for Run's result.
func (r *runningSub) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60s of its context's end")
		return nil
	}
}

// closeSub stops r, failing the test if Run fails to drain.
func closeSub(t testing.TB, r *runningSub) {
	t.Helper()
	if err := r.stop(t); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// serve is startMsgqd for one database on any port.
func serve(t testing.TB, db string, extra ...string) *msgqdProc {
	t.Helper()
	return startMsgqd(t, db, "127.0.0.1:0", extra...)
}

func waitLoaded(t testing.TB, addr string, table Table) {
	t.Helper()
	c, err := NewClient(addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ok := eventually(20*time.Second, func() bool {
		tables, err := c.ListTables(context.Background())
		if err != nil {
			return false
		}
		_, ok := AckWaitOf(tables, table)
		return ok
	})
	if !ok {
		t.Fatalf("table %s never loaded on %s", table, addr)
	}
}
