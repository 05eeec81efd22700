package msgq

// The producer side: enqueue messages with an INSERT in the application's
// own transaction (database/sql), so that a message exists if and only if
// the transaction that made it commits.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The columns Enqueue writes besides id, message, time_next and the trace
// context columns (TraceParentColumn, TraceStateColumn). Plain SQL fills
// the same columns the same way (see Outgoing).
const (
	KeyColumn     = "message_key"
	TypeColumn    = "message_type"
	HeadersColumn = "headers"
	DedupColumn   = "dedup_key"
)

// erBadField is MySQL's "Unknown column" error number.
const erBadField = 1054

var columnName = regexp.MustCompile(`^[A-Za-z0-9_$]{1,64}$`)

// ownColumns are the columns Outgoing's fields set.
var ownColumns = map[string]bool{
	"id": true, "message": true, "time_next": true, KeyColumn: true, TypeColumn: true, HeadersColumn: true,
	DedupColumn: true,
}

// Outgoing is one message for Enqueue: a row of a message table.
//
// The row Enqueue inserts: `id` = ID, or a new UUIDv7 in its 36-character
// text form when ID is nil (for a char(36) or varchar(36) id; a table with
// an integer id must give ID); `message` = Body; `time_next` = 0 (send now)
// or MySQL's NOW(6) + Delay in Unix nanoseconds; `traceparent` and
// `tracestate` = the span context of Enqueue's ctx (see
// TraceParentFromContext) when it has one, each only when the table has
// the column; `message_key`, `message_type`, `headers` (a JSON object) and
// `dedup_key` only when Key, Type, Headers or DedupKey are set; and Columns
// as given. Columns not written take their defaults.
type Outgoing struct {
	// The id column's value: a string, []byte or an integer; nil = a new
	// UUIDv7.
	ID interface{}
	// The message column: []byte, string and json.RawMessage are stored as
	// they are, nil as NULL, any other value as its JSON encoding.
	Body interface{}
	// Optional columns message_key, message_type and headers (the table
	// must have those it is given).
	Key     string
	Type    string
	Headers map[string]string
	// Send no earlier than Delay from now (MySQL's clock); 0 = now.
	Delay time.Duration
	// The dedup_key column (docs/tables.md#deduplicated-enqueue): on a
	// table with msgq_dedup_window, MySQL keeps one row per key. Needed by
	// EnqueueDedup; Enqueue writes it too, and a duplicate then gets MySQL's
	// error 1062 as plain SQL does.
	DedupKey string
	// More columns, by name (e.g. "priority": 10); not those above, but
	// traceparent and tracestate may be given here instead of ctx's.
	Columns map[string]interface{}
}

// Enqueue inserts m into table inside tx and returns the message's id in
// its text form (what a subscriber's Message.ID shows), so the message
// commits or rolls back with the rest of tx. See Outgoing for the columns.
// Errors: a plain error wrapping ErrInvalidArgument for a nil tx, a table
// or column name that is not a plain name, a negative Delay or a Body that
// does not encode as JSON; the database's error otherwise (e.g. a
// duplicate id, or Key given for a table without message_key). Without
// trace columns in the table, a traced ctx costs one more round trip.
func Enqueue(ctx context.Context, tx *sql.Tx, table Table, m Outgoing) (string, error) {
	ids, err := EnqueueBatch(ctx, tx, table, []Outgoing{m})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// EnqueueBatch inserts messages into table inside tx with one multi-row
// INSERT and returns their ids, as Enqueue does for one. A column any
// message sets is DEFAULT in the rows of the others. No messages: nothing
// is inserted.
func EnqueueBatch(ctx context.Context, tx *sql.Tx, table Table, messages []Outgoing) ([]string, error) {
	if err := checkEnqueue(tx, table); err != nil {
		return nil, err
	}
	if len(messages) == 0 {
		return nil, nil
	}
	rows := make([]map[string]sqlValue, len(messages))
	ids := make([]string, len(messages))
	for i, m := range messages {
		row, id, err := outgoingRow(m)
		if err != nil {
			return nil, err
		}
		rows[i], ids[i] = row, id
	}
	if err := insertTraced(ctx, tx, table, rows, ""); err != nil {
		return nil, err
	}
	return ids, nil
}

// checkEnqueue refuses what no enqueue can run with: no transaction, or a
// table whose name would need quoting.
func checkEnqueue(tx *sql.Tx, table Table) error {
	if tx == nil {
		return invalidArgument("enqueue needs a transaction")
	}
	if !columnName.MatchString(table.Name) || (table.Keyspace != "" && !columnName.MatchString(table.Keyspace)) {
		return invalidArgument("table %q is not a plain name", table.String())
	}
	return nil
}

// Enqueued is what EnqueueDedup did with one message.
type Enqueued struct {
	// The id of the row holding the message's DedupKey: the message's own
	// when it was inserted.
	ID string
	// The row was there before: nothing was inserted for this message.
	Duplicate bool
}

// EnqueueDedup inserts m inside tx unless a row already holds m.DedupKey,
// on a table with msgq_dedup_window (docs/tables.md#deduplicated-enqueue).
// A row committed by a racing producer counts: the INSERT waits for that
// transaction and, when it commits, m is a duplicate. The Enqueued says
// which row holds the key and whether it was there before. The statement is
// INSERT ... ON DUPLICATE KEY UPDATE id = id, then a locking read of the
// keys; a duplicate is not an error and leaves tx as it was. Errors: those
// of Enqueue, and a plain error wrapping ErrInvalidArgument for an empty
// DedupKey.
func EnqueueDedup(ctx context.Context, tx *sql.Tx, table Table, m Outgoing) (Enqueued, error) {
	out, err := EnqueueDedupBatch(ctx, tx, table, []Outgoing{m})
	if err != nil {
		return Enqueued{}, err
	}
	return out[0], nil
}

// EnqueueDedupBatch is EnqueueDedup for several messages, with one
// multi-row INSERT; two messages with one key: the second is a duplicate of
// the first. A message whose ID a row with another key already has fails
// the call (nothing else of tx is undone).
func EnqueueDedupBatch(ctx context.Context, tx *sql.Tx, table Table, messages []Outgoing) ([]Enqueued, error) {
	if err := checkEnqueue(tx, table); err != nil {
		return nil, err
	}
	if len(messages) == 0 {
		return nil, nil
	}
	rows := make([]map[string]sqlValue, len(messages))
	ids := make([]string, len(messages))
	var keys []interface{}
	seen := map[string]bool{}
	for i, m := range messages {
		if m.DedupKey == "" {
			return nil, invalidArgument("message %d has no DedupKey", i)
		}
		row, id, err := outgoingRow(m)
		if err != nil {
			return nil, err
		}
		rows[i], ids[i] = row, id
		if !seen[m.DedupKey] {
			seen[m.DedupKey] = true
			keys = append(keys, m.DedupKey)
		}
	}
	if err := insertTraced(ctx, tx, table, rows, " ON DUPLICATE KEY UPDATE `id` = `id`"); err != nil {
		return nil, err
	}
	// A locking read sees the latest committed rows, whatever tx's snapshot.
	q := "SELECT `" + DedupColumn + "`, `id` FROM " + quotedTable(table) + " WHERE `" + DedupColumn +
		"` IN (?" + strings.Repeat(", ?", len(keys)-1) + ") LOCK IN SHARE MODE"
	res, err := tx.QueryContext(ctx, q, keys...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	holders := map[string]string{}
	for res.Next() {
		var key, id sql.RawBytes
		if err := res.Scan(&key, &id); err != nil {
			return nil, err
		}
		holders[string(key)] = string(id)
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	out := make([]Enqueued, len(messages))
	for i, m := range messages {
		holder, ok := holders[m.DedupKey]
		if !ok {
			return nil, fmt.Errorf("msgq: id %q is taken by a row without dedup key %q: nothing was inserted for it", ids[i], m.DedupKey)
		}
		out[i] = Enqueued{ID: holder, Duplicate: holder != ids[i]}
	}
	return out, nil
}

// insertTraced runs one INSERT of rows with ctx's trace context, or
// without it when the table has no trace context columns; suffix follows
// the VALUES.
func insertTraced(ctx context.Context, tx *sql.Tx, table Table, rows []map[string]sqlValue, suffix string) error {
	if tp := TraceParentFromContext(ctx); tp != "" {
		ts := TraceStateFromContext(ctx)
		err := insertRows(ctx, tx, table, withTrace(rows, tp, ts), suffix)
		if ts != "" && isUnknownColumn(err, TraceStateColumn) {
			err = insertRows(ctx, tx, table, withTrace(rows, tp, ""), suffix)
		}
		if !isUnknownColumn(err, TraceParentColumn) {
			return err
		}
		// The table has no trace context columns: enqueue without. A
		// failed statement leaves the transaction as it was.
	}
	return insertRows(ctx, tx, table, rows, suffix)
}

func quotedTable(table Table) string {
	if table.Keyspace != "" {
		return "`" + table.Keyspace + "`.`" + table.Name + "`"
	}
	return "`" + table.Name + "`"
}

// sqlValue is a value for the INSERT: a placeholder's argument, or an SQL
// expression with its arguments.
type sqlValue struct {
	expr string // "" = "?" with arg
	arg  interface{}
}

func outgoingRow(m Outgoing) (map[string]sqlValue, string, error) {
	row := map[string]sqlValue{}
	for name, v := range m.Columns {
		if !columnName.MatchString(name) {
			return nil, "", invalidArgument("column %q is not a plain name", name)
		}
		if ownColumns[name] {
			return nil, "", invalidArgument("column %q is Outgoing's own field, not one of Columns", name)
		}
		row[name] = sqlValue{arg: v}
	}
	id := m.ID
	if id == nil {
		id = NewUUIDv7()
	}
	text, err := idText(id)
	if err != nil {
		return nil, "", err
	}
	row["id"] = sqlValue{arg: id}
	body, err := bodyValue(m.Body)
	if err != nil {
		return nil, "", err
	}
	row["message"] = sqlValue{arg: body}
	switch {
	case m.Delay < 0:
		return nil, "", invalidArgument("negative delay %v", m.Delay)
	case m.Delay == 0:
		row["time_next"] = sqlValue{arg: int64(0)}
	default:
		row["time_next"] = sqlValue{
			expr: "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED) + ?", arg: m.Delay.Nanoseconds()}
	}
	if m.Key != "" {
		row[KeyColumn] = sqlValue{arg: m.Key}
	}
	if m.Type != "" {
		row[TypeColumn] = sqlValue{arg: m.Type}
	}
	if m.DedupKey != "" {
		row[DedupColumn] = sqlValue{arg: m.DedupKey}
	}
	if m.Headers != nil {
		h, err := json.Marshal(m.Headers)
		if err != nil {
			return nil, "", invalidArgument("headers: %v", err)
		}
		row[HeadersColumn] = sqlValue{arg: string(h)}
	}
	return row, text, nil
}

func idText(id interface{}) (string, error) {
	switch v := id.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(v), nil
	}
	return "", invalidArgument("id of type %T: give a string, []byte or an integer", id)
}

func bodyValue(body interface{}) (interface{}, error) {
	switch v := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case json.RawMessage:
		return []byte(v), nil
	case string:
		return v, nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, invalidArgument("body: %v", err)
	}
	return b, nil
}

// withTrace returns rows with the trace context columns added where
// Columns did not give them (tracestate only when traceState is set).
func withTrace(rows []map[string]sqlValue, traceParent, traceState string) []map[string]sqlValue {
	out := make([]map[string]sqlValue, len(rows))
	for i, row := range rows {
		traced := make(map[string]sqlValue, len(row)+2)
		for k, v := range row {
			traced[k] = v
		}
		if _, given := traced[TraceParentColumn]; !given {
			traced[TraceParentColumn] = sqlValue{arg: traceParent}
			if _, given := traced[TraceStateColumn]; !given && traceState != "" {
				traced[TraceStateColumn] = sqlValue{arg: traceState}
			}
		}
		out[i] = traced
	}
	return out
}

// isUnknownColumn: err is MySQL's "Unknown column" error for column.
func isUnknownColumn(err error, column string) bool {
	return mysqlErrno(err) == erBadField && strings.Contains(err.Error(), "'"+column+"'")
}

// insertRows runs one INSERT of rows; a column missing from a row is
// DEFAULT there.
func insertRows(ctx context.Context, tx *sql.Tx, table Table, rows []map[string]sqlValue, suffix string) error {
	seen := map[string]bool{}
	var columns []string
	for _, row := range rows {
		for name := range row {
			if !seen[name] {
				seen[name] = true
				columns = append(columns, name)
			}
		}
	}
	sort.Strings(columns)
	var b strings.Builder
	b.WriteString("INSERT INTO " + quotedTable(table) + " (")
	for i, c := range columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + c + "`")
	}
	b.WriteString(") VALUES ")
	var args []interface{}
	for r, row := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for i, c := range columns {
			if i > 0 {
				b.WriteString(", ")
			}
			v, ok := row[c]
			switch {
			case !ok:
				b.WriteString("DEFAULT")
			case v.expr != "":
				b.WriteString(v.expr)
				args = append(args, v.arg)
			default:
				b.WriteString("?")
				args = append(args, v.arg)
			}
		}
		b.WriteString(")")
	}
	b.WriteString(suffix)
	_, err := tx.ExecContext(ctx, b.String(), args...)
	return err
}

// NewUUIDv7 returns a new UUID version 7 (RFC 9562) in its 36-character
// text form: 48 bits of Unix milliseconds, then random bits, so ids made
// later sort later (to the millisecond) and new rows go to the end of the
// primary key.
func NewUUIDv7() string {
	u, err := uuidV7(time.Now(), rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("msgq: no randomness for a UUIDv7: %v", err))
	}
	return u
}

func uuidV7(now time.Time, random io.Reader) (string, error) {
	var u [16]byte
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(u[0:6], ms[2:8])
	if _, err := io.ReadFull(random, u[6:]); err != nil {
		return "", err
	}
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // variant 10
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}
