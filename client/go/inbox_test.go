package msgq

// Tests of Inbox (docs/effectively-once.md) against real MariaDB servers: the
// helper alone on the consumer's MariaDB (once per id, rollbacks, a failed
// commit, the missing-grant error, purge), then through msgqd (on the harness's
// MariaDB) with consumer processes: two consumers on one redelivered message,
// and the kill campaign.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func transferMessage(t *testing.T, id, amount int) *Message {
	t.Helper()
	s := testSchema(t, "id:bigint", "message:json")
	m, err := decodeRow(s, row(0, fmt.Sprint(id), fmt.Sprintf(`{"from": 1, "to": 2, "amount": %d}`, amount)),
		"", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func quietInbox(t *testing.T, db *sql.DB, o InboxOptions) *Inbox {
	t.Helper()
	if o.Source == "" {
		o.Source = "test"
	}
	o.Logf = func(string, ...interface{}) {}
	in, err := NewInbox(db, o)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func counting(runs *int, work InboxWork) InboxWork {
	return func(ctx context.Context, m *Message, tx *sql.Tx) Result {
		*runs++
		return work(ctx, m, tx)
	}
}

func TestInboxRunsOncePerIDAndAcksDuplicates(t *testing.T) {
	_, db := newBank(t, 1000)
	in := quietInbox(t, db, InboxOptions{})
	runs := 0
	h := in.Handler(Table{Keyspace: "msgq", Name: "transfers"}, counting(&runs, transfer))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if r := h(ctx, transferMessage(t, 7, 30)); r != Ack() {
			t.Fatalf("delivery %d: %v, want ack", i, r)
		}
	}
	if runs != 1 || in.Stats() != (InboxStats{Processed: 1, Duplicates: 2}) {
		t.Fatalf("runs %d, stats %+v; want 1 and {1 2}", runs, in.Stats())
	}
	if got := balances(t, db); got != [2]int64{970, 30} {
		t.Fatalf("balances %v, want [970 30]", got)
	}
	var src, ks, tbl, id string
	if err := db.QueryRow("SELECT source, keyspace, table_name, message_id FROM msgq_inbox").Scan(&src, &ks, &tbl, &id); err != nil {
		t.Fatal(err)
	}
	if got := []string{src, ks, tbl, id}; !reflect.DeepEqual(got, []string{"test", "msgq", "transfers", "7"}) {
		t.Fatalf("inbox row %q", got)
	}
	// The key includes the source, the keyspace and the table.
	other := quietInbox(t, db, InboxOptions{Source: "other"})
	for _, r := range []Result{
		other.Handler(Table{Keyspace: "msgq", Name: "transfers"}, counting(&runs, transfer))(ctx, transferMessage(t, 7, 30)),
		in.Handler(Table{Keyspace: "msgq", Name: "refunds"}, counting(&runs, transfer))(ctx, transferMessage(t, 7, 30)),
		in.Handler(Table{Name: "transfers"}, counting(&runs, transfer))(ctx, transferMessage(t, 7, 30)),
	} {
		if r != Ack() {
			t.Fatalf("%v, want ack", r)
		}
	}
	if runs != 4 {
		t.Fatalf("runs %d, want 4", runs)
	}
}

func TestInboxFailedWorkRollsBackWithItsRow(t *testing.T) {
	_, db := newBank(t, 1000)
	in := quietInbox(t, db, InboxOptions{})
	ctx := context.Background()
	tbl := Table{Name: "t"}
	runs := 0
	then := func(r Result) InboxWork {
		return counting(&runs, func(ctx context.Context, m *Message, tx *sql.Tx) Result {
			if got := transfer(ctx, m, tx); got != Ack() {
				t.Fatalf("transfer: %v", got)
			}
			return r
		})
	}
	backendDown := errors.New("backend down")
	for _, want := range []Result{Fail(backendDown), Retry(5*time.Second, "later"), RetryBackoff("soon"), Dead("bad")} {
		if got := in.Handler(tbl, then(want))(ctx, transferMessage(t, 1, 5)); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// A panicking work rolls back too (the Subscriber turns the panic into
	// a retry).
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want boom", p)
			}
		}()
		in.Handler(tbl, func(ctx context.Context, m *Message, tx *sql.Tx) Result {
			runs++
			transfer(ctx, m, tx)
			panic("boom")
		})(ctx, transferMessage(t, 1, 5))
	}()
	if got := balances(t, db); got != [2]int64{1000, 0} {
		t.Fatalf("balances %v, want [1000 0]", got)
	}
	if got := inboxIDs(t, db, "msgq_inbox"); len(got) != 0 {
		t.Fatalf("inbox rows %v, want none", got)
	}
	if got := in.Handler(tbl, counting(&runs, transfer))(ctx, transferMessage(t, 1, 5)); got != Ack() {
		t.Fatalf("got %v, want ack", got)
	}
	if got := balances(t, db); got != [2]int64{995, 5} || runs != 6 {
		t.Fatalf("balances %v runs %d, want [995 5] and 6", got, runs)
	}
	if got := inboxIDs(t, db, "msgq_inbox"); !reflect.DeepEqual(got, []int{1}) {
		t.Fatalf("inbox rows %v, want [1]", got)
	}
	// No connection leaked by the rollbacks (a panic included).
	if n := db.Stats().InUse; n != 0 {
		t.Fatalf("%d connections in use", n)
	}
}

func TestInboxFailedCommitRollsBackAndRecovers(t *testing.T) {
	_, db := newBank(t, 1000)
	in := quietInbox(t, db, InboxOptions{})
	ctx := context.Background()
	root := openDB(t, consumerSocket(t), "root", "", "")
	loseConnection := func(ctx context.Context, m *Message, tx *sql.Tx) Result {
		transfer(ctx, m, tx)
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		mustExec(t, root, fmt.Sprintf("KILL %d", id)) // the commit will fail
		return Ack()
	}
	got := in.Handler(Table{Name: "t"}, loseConnection)(ctx, transferMessage(t, 2, 9))
	if got.Kind() != KindRetry || !strings.HasPrefix(got.Reason(), "inbox: ") || got.Err() == nil {
		t.Fatalf("got %v (err %v), want a retry with reason inbox: ...", got, got.Err())
	}
	if _, ok := got.Delay(); ok {
		t.Fatalf("got %v, want the table's backoff", got)
	}
	if b := balances(t, db); b != [2]int64{1000, 0} || len(inboxIDs(t, db, "msgq_inbox")) != 0 || in.Stats().Processed != 0 {
		t.Fatalf("balances %v, inbox %v, stats %+v after a failed commit", b, inboxIDs(t, db, "msgq_inbox"), in.Stats())
	}
	// The next message gets another connection.
	if got := in.Handler(Table{Name: "t"}, transfer)(ctx, transferMessage(t, 2, 9)); got != Ack() {
		t.Fatalf("got %v, want ack", got)
	}
	if b := balances(t, db); b != [2]int64{991, 9} {
		t.Fatalf("balances %v, want [991 9]", b)
	}
}

func TestInboxMissingCreateGrantIsNamed(t *testing.T) {
	bank, db := newBank(t, 1000)
	root := openDB(t, consumerSocket(t), "root", "", "")
	user := "nocreate_" + bank
	mustExec(t, root, fmt.Sprintf("CREATE USER '%s'@'localhost' IDENTIFIED BY 'pw'", user))
	mustExec(t, root, fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE ON %s.* TO '%s'@'localhost'", bank, user))
	limited := openDB(t, consumerSocket(t), user, "pw", bank)
	in := quietInbox(t, limited, InboxOptions{})
	ctx := context.Background()
	err := in.EnsureTable(ctx)
	var ie *InboxError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "GRANT CREATE") ||
		!strings.Contains(err.Error(), "schema/msgq_inbox.sql") {
		t.Fatalf("EnsureTable: %v, want an InboxError naming GRANT CREATE and schema/msgq_inbox.sql", err)
	}
	runs := 0
	got := in.Handler(Table{Name: "t"}, counting(&runs, transfer))(ctx, transferMessage(t, 3, 1))
	if got.Kind() != KindRetry || !strings.Contains(got.Reason(), "GRANT CREATE") || runs != 0 {
		t.Fatalf("got %v, runs %d; want a retry naming GRANT CREATE, no run", got, runs)
	}
	// Created by someone who may, the table works for the user without CREATE.
	if err := quietInbox(t, db, InboxOptions{}).EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	if got := in.Handler(Table{Name: "t"}, counting(&runs, transfer))(ctx, transferMessage(t, 3, 1)); got != Ack() || runs != 1 {
		t.Fatalf("got %v, runs %d; want ack, 1", got, runs)
	}
}

func TestInboxNoCreateAndBadNames(t *testing.T) {
	_, db := newBank(t, 1000)
	in := quietInbox(t, db, InboxOptions{NoCreate: true, InboxTable: "my_inbox"})
	err := in.EnsureTable(context.Background())
	var ie *InboxError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "inbox table my_inbox does not exist") {
		t.Fatalf("EnsureTable: %v, want InboxError 'does not exist'", err)
	}
	for _, o := range []InboxOptions{
		{Source: "s", InboxTable: "x; DROP TABLE y"},
		{Source: ""},
		{Source: strings.Repeat("s", 65)},
	} {
		if _, err := NewInbox(db, o); err == nil {
			t.Errorf("NewInbox(%+v) = nil error", o)
		}
	}
}

func TestInboxPurgesAfterRetentionAndNotBefore(t *testing.T) {
	_, db := newBank(t, 1000)
	in := quietInbox(t, db, InboxOptions{})
	ctx := context.Background()
	runs := 0
	h := in.Handler(Table{Name: "t"}, counting(&runs, transfer))
	for i := 1; i <= 25; i++ {
		if r := h(ctx, transferMessage(t, i, 1)); r != Ack() {
			t.Fatalf("message %d: %v", i, r)
		}
	}
	// Ages by the database's clock: 1..10 processed 100 s ago, 11..15 50 s
	// ago, 16..25 now.
	mustExec(t, db, "UPDATE msgq_inbox SET processed_at = NOW(6) - INTERVAL 100 SECOND "+
		"WHERE CAST(message_id AS UNSIGNED) <= 10")
	mustExec(t, db, "UPDATE msgq_inbox SET processed_at = NOW(6) - INTERVAL 50 SECOND "+
		"WHERE CAST(message_id AS UNSIGNED) BETWEEN 11 AND 15")
	purge := func(retention time.Duration, batch int, want int64) {
		t.Helper()
		n, err := in.Purge(ctx, retention, PurgeOptions{Batch: batch})
		if err != nil || n != want {
			t.Fatalf("Purge(%v, batch %d) = %d, %v; want %d", retention, batch, n, err, want)
		}
	}
	purge(200*time.Second, 0, 0)
	if got := inboxIDs(t, db, "msgq_inbox"); len(got) != 25 {
		t.Fatalf("%d rows left, want 25", len(got))
	}
	purge(60*time.Second, 3, 10) // 4 statements: 3, 3, 3, 1
	want := []int{}
	for i := 11; i <= 25; i++ {
		want = append(want, i)
	}
	if got := inboxIDs(t, db, "msgq_inbox"); !reflect.DeepEqual(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	purge(60*time.Second, 3, 0)
	purge(40*time.Second, 0, 5)
	if got := inboxIDs(t, db, "msgq_inbox"); !reflect.DeepEqual(got, want[5:]) {
		t.Fatalf("left %v, want %v", got, want[5:])
	}
	if _, err := in.Purge(ctx, 0, PurgeOptions{}); err == nil {
		t.Fatal("Purge(0) = nil error")
	}
	// A purged id is processed again if it ever came back: why the
	// retention must exceed the longest redelivery.
	if r := h(ctx, transferMessage(t, 1, 1)); r != Ack() || runs != 26 {
		t.Fatalf("%v, runs %d; want ack, 26", r, runs)
	}
}

// inboxFixture: a message table in msgq's MariaDB served by msgqd on a
// fixed address (restart keeps it), and a bank on the consumer's MariaDB.
type inboxFixture struct {
	db, table  string
	server     *msgqdProc
	bank       string
	bankDB     *sql.DB
	tmp        string
	consumers  []*consumerProc
	consumerNo int
}

func newInboxFixture(t *testing.T, opening int64, overrides string) *inboxFixture {
	f := &inboxFixture{db: newDatabase(t), table: "transfers", tmp: t.TempDir()}
	createTable(t, f.db, f.table, overrides, "")
	f.bank, f.bankDB = newBank(t, opening)
	f.server = serve(t, f.db)
	waitLoaded(t, f.server.addr, Table{Keyspace: f.db, Name: f.table})
	return f
}

func (f *inboxFixture) consumer(t *testing.T, c consumerConfig) (*consumerProc, string) {
	f.consumerNo++
	c.msgqd, c.keyspace, c.table = f.server.addr, f.db, f.table
	c.bankSocket, c.bank = consumerSocket(t), f.bank
	c.events = filepath.Join(f.tmp, fmt.Sprintf("c%d.events", f.consumerNo))
	p := startConsumer(t, c)
	f.consumers = append(f.consumers, p)
	return p, c.events
}

func (f *inboxFixture) acked(t *testing.T) int64 {
	return sqlInt(t, fmt.Sprintf("SELECT COUNT(*) FROM %s.%s WHERE time_acked IS NOT NULL", f.db, f.table))
}

// logs is every consumer's events and log, for a failing test.
func (f *inboxFixture) logs() string {
	var b strings.Builder
	names, _ := filepath.Glob(filepath.Join(f.tmp, "*"))
	for _, n := range names {
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(n), tail(n))
	}
	fmt.Fprintf(&b, "--- msgqd\n%s\n", tail(f.server.log))
	return b.String()
}

func TestInboxTwoConsumerProcessesOneApplies(t *testing.T) {
	f := newInboxFixture(t, 1000, "vt_ack_wait=1")
	hold := filepath.Join(f.tmp, "release")
	// A runs the work and holds its transaction open (its inbox row
	// locked), having left msgqd (else msgqd might hand it every resend)
	// and without heartbeats (which would keep the message from being
	// sent again).
	_, aEvents := f.consumer(t, consumerConfig{holdFile: hold, leave: true})
	insertTransfers(t, f.db, f.table, 1, 1)
	if !eventually(20*time.Second, func() bool { return hasEvent(aEvents, "run", "1") }) {
		t.Fatalf("consumer A never started the work\n%s", f.logs())
	}
	_, bEvents := f.consumer(t, consumerConfig{holdFile: hold})
	// After the ack wait (1 s) the message goes again, to B, whose INSERT
	// waits on A's row lock (Execute: the driver prepares statements).
	if !eventually(20*time.Second, func() bool {
		return queryInt(t, f.bankDB, "SELECT COUNT(*) FROM information_schema.processlist "+
			"WHERE command IN ('Query', 'Execute') AND info LIKE 'INSERT INTO `msgq_inbox`%'") == 1
	}) {
		t.Fatalf("consumer B never waited on the inbox row\n%s", f.logs())
	}
	if err := os.WriteFile(hold, nil, 0o644); err != nil { // A commits; B gets a duplicate key
		t.Fatal(err)
	}
	if !eventually(20*time.Second, func() bool { return hasEvent(bEvents, "dup", "1") && f.acked(t) == 1 }) {
		t.Fatalf("B did not skip and ack the message\n%s", f.logs())
	}
	if got := readEvents(aEvents); !reflect.DeepEqual(got, [][2]string{{"run", "1"}, {"commit", "1"}}) {
		t.Fatalf("A's events %v, want run 1, commit 1\n%s", got, f.logs())
	}
	if hasEvent(bEvents, "run", "1") {
		t.Fatalf("B ran the work\n%s", f.logs())
	}
	if b := balances(t, f.bankDB); b != [2]int64{999, 1} { // message 1 moves 1
		t.Fatalf("balances %v, want [999 1]", b)
	}
	if got := appliedCounts(t, f.bankDB); !reflect.DeepEqual(got, map[int64]int64{1: 1}) {
		t.Fatalf("applied %v, want {1: 1}", got)
	}
}

// The kill campaign: two consumer processes at a time move money for each
// of 100 messages while msgqd and consumers are killed with SIGKILL at
// random moments, and consumers SIGKILL themselves right after a commit,
// before its ack. At the end every message was applied exactly once and is acked.
// MSGQ_INBOX_SEED=N replays a campaign's choices (the seed is logged).
func TestInboxKillCampaign(t *testing.T) {
	const (
		messages = 100
		kills    = 8
		opening  = 1000000
		crash    = 0.2 // probability of a self-kill right after a commit
	)
	seed := time.Now().UnixNano() % 100000
	if s := os.Getenv("MSGQ_INBOX_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("MSGQ_INBOX_SEED=%d", seed)
	rng := rand.New(rand.NewSource(seed))
	// Small batches, a 1 s ack wait and a 2 s cap on the backoff, so that
	// redeliveries come quickly.
	f := newInboxFixture(t, opening, "vt_ack_wait=1,vt_batch_size=5,vt_max_backoff=2")
	insertTransfers(t, f.db, f.table, 1, messages)
	start := func(p float64) *consumerProc {
		c, _ := f.consumer(t, consumerConfig{crash: p, seed: rng.Int63(), workDelay: 30 * time.Millisecond})
		return c
	}
	// The first consumer dies right after its first commit, so the window
	// between commit and ack is hit in every run; the others now and then.
	live := []*consumerProc{start(1), start(crash)}
	killed := map[*consumerProc]bool{}
	counts := map[string]int{}
	began := time.Now()
	commitsSoFar := func() int {
		n := 0
		for _, c := range f.consumers {
			for _, e := range readEvents(c.events) {
				if e[0] == "commit" {
					n++
				}
			}
		}
		return n
	}
	replaceDead := func() {
		for i, c := range live {
			if !c.alive() {
				live[i] = start(crash)
			}
		}
	}
	for k := 0; k < kills; k++ {
		// Each kill waits for some progress (3 more commits, up to 10 s), so
		// that the consumers work between kills however loaded the machine
		// is; the dead are replaced meanwhile.
		before := commitsSoFar()
		eventually(10*time.Second, func() bool {
			replaceDead()
			return commitsSoFar() >= before+3 || before+3 > messages
		})
		time.Sleep(time.Duration(rng.Intn(500)) * time.Millisecond)
		action := []string{"msgqd", "consumer", "consumer", "both"}[rng.Intn(4)]
		counts[action]++
		if action == "consumer" || action == "both" {
			victim := live[rng.Intn(len(live))]
			if victim.alive() { // (else it crashed by itself)
				killed[victim] = true
			}
			victim.kill()
		}
		if action == "msgqd" || action == "both" {
			f.server.stop(syscall.SIGKILL)
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
			f.server = f.server.restart(t, syscall.SIGKILL)
		}
		replaceDead()
	}
	time.Sleep(time.Second)
	for _, c := range live {
		killed[c] = true
		c.kill()
	}
	selfCrashes := 0
	for _, c := range f.consumers {
		if !killed[c] && !c.alive() && c.killedBySignal() {
			selfCrashes++
		}
	}
	// Finish with consumers that do not crash.
	for i := range live {
		live[i] = start(0)
	}
	if !eventually(60*time.Second, func() bool { return f.acked(t) == messages }) {
		t.Fatalf("only %d of %d acked\n%s", f.acked(t), messages, f.logs())
	}
	var runs, commits, dups int
	names, _ := filepath.Glob(filepath.Join(f.tmp, "*.events"))
	for _, n := range names {
		for _, e := range readEvents(n) {
			switch e[0] {
			case "run":
				runs++
			case "commit":
				commits++
			case "dup":
				dups++
			}
		}
	}
	t.Logf("campaign: %d messages, kills %v, %d consumers started, %d crashes right after a commit, "+
		"work runs %d, commits %d, duplicates acked %d, %.1f s",
		messages, counts, len(f.consumers), selfCrashes, runs, commits, dups, time.Since(began).Seconds())
	// Exactly once: each message applied once, the balances add up.
	want := map[int64]int64{}
	for i := int64(1); i <= messages; i++ {
		want[i] = 1
	}
	if got := appliedCounts(t, f.bankDB); !reflect.DeepEqual(got, want) {
		t.Fatalf("applied %v, want each of 1..%d once", got, messages)
	}
	total := int64(messages * (messages + 1) / 2)
	if b := balances(t, f.bankDB); b != [2]int64{opening - total, total} {
		t.Fatalf("balances %v, want [%d %d]", b, opening-total, total)
	}
	// (A kill between the COMMIT and the "commit" line loses the line.)
	if commits > messages {
		t.Fatalf("%d commits logged for %d messages", commits, messages)
	}
	if n := queryInt(t, f.bankDB, "SELECT COUNT(*) FROM msgq_inbox"); n != messages {
		t.Fatalf("%d inbox rows, want %d", n, messages)
	}
	// The campaign hit the window between commit and ack.
	if selfCrashes == 0 || dups == 0 {
		t.Fatalf("%d crashes right after a commit, %d duplicates: the window between commit and ack "+
			"was not exercised (seed %d)", selfCrashes, dups, seed)
	}
}

// InboxDDL is schema/msgq_inbox.sql's statement (comments and spacing
// aside), so a table the helper creates is the documented one.
func TestInboxDDLMatchesSchemaFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(env.src, "schema", "msgq_inbox.sql"))
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if i := strings.Index(l, "--"); i >= 0 {
				l = l[:i]
			}
			lines = append(lines, l)
		}
		return strings.TrimSuffix(strings.Join(strings.Fields(strings.Join(lines, " ")), " "), ";")
	}
	// (The helper quotes the name it is given.)
	if got, want := norm(fmt.Sprintf(InboxDDL, "msgq_inbox")), norm(strings.Replace(string(b),
		"EXISTS msgq_inbox", "EXISTS `msgq_inbox`", 1)); got != want {
		t.Fatalf("InboxDDL:\n%s\nschema/msgq_inbox.sql:\n%s", got, want)
	}
}
