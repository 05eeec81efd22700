package msgq

// Enqueue against the harness's MariaDB, and what msgqd streams of it.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.opentelemetry.io/otel/trace"
)

var uuidV7Text = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestUUIDv7Layout(t *testing.T) {
	at := time.UnixMilli(0x0123456789ab)
	for random, want := range map[byte]string{
		0x00: "01234567-89ab-7000-8000-000000000000",
		0xff: "01234567-89ab-7fff-bfff-ffffffffffff",
	} {
		got, err := uuidV7(at, bytes.NewReader(bytes.Repeat([]byte{random}, 10)))
		if err != nil || got != want {
			t.Errorf("uuidV7 with random bytes %#x = %q, %v; want %q", random, got, err, want)
		}
	}
	if _, err := uuidV7(at, bytes.NewReader(make([]byte, 9))); err == nil {
		t.Error("uuidV7 with 9 random bytes: no error")
	}
	if u := NewUUIDv7(); !uuidV7Text.MatchString(u) {
		t.Errorf("NewUUIDv7 = %q", u)
	}
}

// producerDB opens database/sql on the harness's MariaDB, database db.
func producerDB(t *testing.T, db string) *sql.DB {
	t.Helper()
	h, err := sql.Open("mysql", fmt.Sprintf("root@unix(%s)/%s", env.socket, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// tracedContext carries a sampled span context with a tracestate.
func tracedContext(t *testing.T) (context.Context, string) {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=x1")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	return trace.ContextWithSpanContext(context.Background(), sc),
		"00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"
}

func inTx(t *testing.T, h *sql.DB, commit bool, f func(tx *sql.Tx)) {
	t.Helper()
	tx, err := h.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f(tx)
	if commit {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestEnqueueCommitsWithTheTransactionAndStreams(t *testing.T) {
	db := newDatabase(t)
	sqlExec(t, "CREATE TABLE "+db+".outbox (id varchar(36) NOT NULL, priority tinyint NOT NULL DEFAULT 50, "+
		"epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, "+
		"message json, message_key varchar(255) DEFAULT NULL, message_type varchar(255) DEFAULT NULL, "+
		"headers json DEFAULT NULL, traceparent varchar(55) DEFAULT NULL, tracestate varchar(512) DEFAULT NULL, "+
		"PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) COMMENT "+
		"'vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,vt_cache_size=10000,vt_poller_interval=0.5'")
	h := producerDB(t, db)
	ctx, traceParent := tracedContext(t)
	table := Table{Name: "outbox"}

	var id string
	inTx(t, h, true, func(tx *sql.Tx) {
		var err error
		id, err = Enqueue(ctx, tx, table, Outgoing{
			Body: map[string]int{"n": 1}, Key: "k1", Type: "order.placed",
			Headers: map[string]string{"b": "2", "a": "1"},
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if !uuidV7Text.MatchString(id) {
		t.Errorf("generated id %q is not a UUIDv7", id)
	}
	inTx(t, h, false, func(tx *sql.Tx) {
		if _, err := Enqueue(ctx, tx, table, Outgoing{ID: "rolled-back", Body: "{}"}); err != nil {
			t.Fatal(err)
		}
	})
	inTx(t, h, true, func(tx *sql.Tx) {
		if _, err := Enqueue(context.Background(), tx, table, Outgoing{ID: "later", Body: "{}", Delay: time.Hour}); err != nil {
			t.Fatal(err)
		}
	})
	var batch []string
	inTx(t, h, true, func(tx *sql.Tx) {
		var err error
		batch, err = EnqueueBatch(context.Background(), tx, table, []Outgoing{
			{ID: "b1", Body: "{}", Key: "kb"},
			{ID: "b2", Columns: map[string]interface{}{"priority": 10}},
			{Body: json.RawMessage(`{"n": 3}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if len(batch) != 3 || batch[0] != "b1" || batch[1] != "b2" || !uuidV7Text.MatchString(batch[2]) {
		t.Fatalf("EnqueueBatch ids %q", batch)
	}

	got := sqlExec(t, "SELECT id, priority, time_next, message, message_key, message_type, headers, traceparent, "+
		"tracestate FROM "+db+".outbox WHERE id <> 'later' ORDER BY id")
	rows := map[string]string{
		id:       id + "\t50\t0\t{\"n\":1}\tk1\torder.placed\t{\"a\":\"1\",\"b\":\"2\"}\t" + traceParent + "\tvendor=x1",
		"b1":     "b1\t50\t0\t{}\tkb\tNULL\tNULL\tNULL\tNULL",
		"b2":     "b2\t10\t0\tNULL\tNULL\tNULL\tNULL\tNULL\tNULL",
		batch[2]: batch[2] + "\t50\t0\t{\"n\": 3}\tNULL\tNULL\tNULL\tNULL\tNULL",
	}
	ids := []string{id, "b1", "b2", batch[2]}
	sort.Strings(ids) // as MySQL orders these ids: digits before letters
	var lines []string
	for _, k := range ids {
		lines = append(lines, rows[k])
	}
	want := strings.Join(lines, "\n")
	if got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
	// time_next of the delayed one: an hour after the INSERT by MySQL's clock.
	ahead := time.Duration(sqlInt(t, "SELECT time_next - CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED) FROM "+
		db+".outbox WHERE id = 'later'"))
	if ahead <= time.Hour-time.Minute || ahead > time.Hour {
		t.Errorf("delayed message due in %v, want just under an hour", ahead)
	}

	// msgqd streams the committed, due messages, with their columns.
	srv := serve(t, db)
	var mu sync.Mutex
	received := map[string]*Message{}
	sub, err := subscribe([]string{srv.addr}, Table{Keyspace: db, Name: "outbox"},
		func(ctx context.Context, m *Message) Result {
			mu.Lock()
			received[m.ID()] = m
			mu.Unlock()
			return Ack()
		}, Options{NoTracing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(received)
	}
	if !eventually(20*time.Second, func() bool { return count() >= 4 }) {
		t.Fatalf("received %d of 4", count())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{id, "b1", "b2", batch[2]} {
		if received[want] == nil {
			t.Errorf("%s not received; got %v", want, received)
		}
	}
	if m := received[id]; m != nil {
		key, _ := m.Text(KeyColumn)
		if m.TraceParent() != traceParent || m.TraceState() != "vendor=x1" || key != "k1" {
			t.Errorf("streamed %s: traceparent %q, tracestate %q, key %q", id, m.TraceParent(), m.TraceState(), key)
		}
	}
}

func TestEnqueueWithoutTraceColumnsAndItsErrors(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "plain", "", "") // bigint id; no trace, key, type or headers columns
	h := producerDB(t, db)
	ctx, _ := tracedContext(t)
	table := Table{Keyspace: db, Name: "plain"}

	inTx(t, h, true, func(tx *sql.Tx) {
		if id, err := Enqueue(ctx, tx, table, Outgoing{ID: int64(7), Body: json.RawMessage(`{"n": 7}`)}); err != nil || id != "7" {
			t.Fatalf("Enqueue = %q, %v", id, err)
		}
		// A failed statement leaves the transaction usable.
		_, err := Enqueue(ctx, tx, table, Outgoing{ID: int64(8), Body: "{}", Key: "k"})
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1054 || !strings.Contains(me.Message, "'message_key'") {
			t.Errorf("Key without a message_key column: %v, want error 1054 naming it", err)
		}
		_, err = Enqueue(ctx, tx, table, Outgoing{ID: int64(7), Body: "{}"})
		if !errors.As(err, &me) || me.Number != 1062 {
			t.Errorf("duplicate id: %v, want error 1062", err)
		}
	})
	if got := sqlExec(t, "SELECT id, message, time_next FROM "+db+".plain"); got != "7\t{\"n\": 7}\t0" {
		t.Errorf("rows %q", got)
	}

	inTx(t, h, false, func(tx *sql.Tx) {
		for _, c := range []struct {
			name  string
			table Table
			m     Outgoing
			want  string
		}{
			{"table name", Table{Name: "a b"}, Outgoing{ID: 1}, `table "a b" is not a plain name`},
			{"column name", table, Outgoing{ID: 1, Columns: map[string]interface{}{"a`b": 1}}, "column \"a`b\" is not a plain name"},
			{"own column", table, Outgoing{ID: 1, Columns: map[string]interface{}{"id": 2}}, `column "id" is Outgoing's own field, not one of Columns`},
			{"negative delay", table, Outgoing{ID: 1, Delay: -time.Second}, "negative delay -1s"},
			{"id type", table, Outgoing{ID: 1.5}, "id of type float64: give a string, []byte or an integer"},
			{"body", table, Outgoing{ID: 1, Body: func() {}}, "body: json: unsupported type: func()"},
		} {
			_, err := Enqueue(ctx, tx, c.table, c.m)
			if !errors.Is(err, ErrInvalidArgument) || err.Error() != "msgq: invalid argument: "+c.want {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		}
	})
	if _, err := Enqueue(ctx, nil, table, Outgoing{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil tx: %v", err)
	}
	inTx(t, h, true, func(tx *sql.Tx) {
		if ids, err := EnqueueBatch(ctx, tx, table, nil); err != nil || ids != nil {
			t.Errorf("empty batch: %v, %v", ids, err)
		}
	})
	if n := sqlInt(t, "SELECT COUNT(*) FROM "+db+".plain"); n != 1 {
		t.Errorf("%d rows after the refused enqueues, want 1", n)
	}
}

// Two producers enqueue the same keys at once, each key in its own
// transaction: one row per key, and for each key one of them learns it was
// a duplicate of the other's row.
func TestEnqueueDedupRacingProducers(t *testing.T) {
	db := newDatabase(t)
	sqlExec(t, "CREATE TABLE "+db+".once (id varchar(36) NOT NULL, priority tinyint NOT NULL DEFAULT 50, "+
		"epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, time_acked bigint DEFAULT NULL, "+
		"message json, dedup_key varchar(64) DEFAULT NULL, "+
		"time_created bigint DEFAULT (UNIX_TIMESTAMP(NOW(6)) * 1000000000), UNIQUE KEY dedup_key (dedup_key), "+
		"PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, time_next)) COMMENT "+
		"'vitess_message,vt_ack_wait=30,vt_purge_after=86400,vt_batch_size=10,vt_cache_size=10000,"+
		"vt_poller_interval=0.5,msgq_dedup_window=60'")
	h := producerDB(t, db)
	ctx := context.Background()
	table := Table{Name: "once"}

	var first Enqueued
	inTx(t, h, true, func(tx *sql.Tx) {
		var err error
		if first, err = EnqueueDedup(ctx, tx, table, Outgoing{Body: "{}", DedupKey: "k0"}); err != nil || first.Duplicate {
			t.Fatalf("first EnqueueDedup = %+v, %v", first, err)
		}
	})
	inTx(t, h, true, func(tx *sql.Tx) {
		if again, err := EnqueueDedup(ctx, tx, table, Outgoing{Body: "{}", DedupKey: "k0"}); err != nil ||
			again != (Enqueued{ID: first.ID, Duplicate: true}) {
			t.Errorf("second EnqueueDedup = %+v, %v; want the first's id, duplicate", again, err)
		}
		// The plain form gets MySQL's duplicate-key error, as plain SQL does.
		_, err := Enqueue(ctx, tx, table, Outgoing{Body: "{}", DedupKey: "k0"})
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 {
			t.Errorf("Enqueue of a taken key: %v, want error 1062", err)
		}
		if _, err := EnqueueDedup(ctx, tx, table, Outgoing{Body: "{}"}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("EnqueueDedup without a key: %v", err)
		}
	})

	const keys = 100
	var results [2][keys]Enqueued
	var wg sync.WaitGroup
	start := make(chan struct{})
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			<-start
			for k := 0; k < keys; k++ {
				tx, err := h.BeginTx(ctx, nil)
				if err == nil {
					results[p][k], err = EnqueueDedup(ctx, tx, table, Outgoing{Body: "{}", DedupKey: fmt.Sprint("race-", k)})
					if err == nil {
						err = tx.Commit()
					} else {
						tx.Rollback()
					}
				}
				if err != nil {
					t.Errorf("producer %d key %d: %v", p, k, err)
					return
				}
			}
		}(p)
	}
	close(start)
	wg.Wait()
	for k := 0; k < keys; k++ {
		held := sqlExec(t, fmt.Sprintf("SELECT id FROM %s.once WHERE dedup_key = 'race-%d'", db, k))
		a, b := results[0][k], results[1][k]
		if a.ID != held || b.ID != held || a.Duplicate == b.Duplicate {
			t.Errorf("key %d: row %q, producers got %+v and %+v; want that id twice, one duplicate", k, held, a, b)
		}
	}
	if n := sqlInt(t, "SELECT COUNT(*) FROM "+db+".once"); n != keys+1 {
		t.Errorf("%d rows, want %d", n, keys+1)
	}
}
