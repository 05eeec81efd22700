package msgq

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"msgq.dev/client/go/internal/msgqv1"
)

// Table names one message table: a keyspace (MySQL database; "" = the first
// database msgqd serves that has the table) and the table's name.
type Table struct {
	Keyspace string
	Name     string
}

// String is "keyspace.name", or "name" for the default keyspace.
func (t Table) String() string {
	if t.Keyspace == "" {
		return t.Name
	}
	return t.Keyspace + "." + t.Name
}

// Delivery names one send of a message: its id (column 0, text form) and the
// epoch it was streamed with. MessageNack and MessageExtend take it: only
// the holder of the latest delivery can nack or extend a message.
type Delivery struct {
	ID    string
	Epoch int64
}

// Field is one column of a message table as MessageStream announces it:
// its name and information_schema.COLUMNS.DATA_TYPE, lower case ("bigint",
// "varchar", "json", ...).
type Field struct {
	Name string
	Type string
}

// Schema is the columns of a table, column 0 being the id. Immutable.
type Schema struct {
	fields []Field
	index  map[string]int
}

func newSchema(fields []*msgqv1.Field) (*Schema, error) {
	if len(fields) == 0 {
		return nil, fmt.Errorf("schema has no columns")
	}
	s := &Schema{fields: make([]Field, len(fields)), index: make(map[string]int, len(fields))}
	for i, f := range fields {
		if f.GetName() == "" {
			return nil, fmt.Errorf("schema column %d has an empty name", i)
		}
		s.fields[i] = Field{Name: f.GetName(), Type: f.GetType()}
		if _, dup := s.index[f.GetName()]; !dup {
			s.index[f.GetName()] = i
		}
	}
	return s, nil
}

// Fields returns the columns in stream order (a copy).
func (s *Schema) Fields() []Field { return append([]Field(nil), s.fields...) }

// Index returns the position of the column called name (exact,
// case-sensitive), or -1.
func (s *Schema) Index(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// Message is one delivery of a row of a message table, decoded. Immutable;
// safe to read from several goroutines.
//
// Values are typed by the column's type: integer types (tinyint ... bigint,
// year) as int64, or uint64 when the value does not fit int64 (unsigned
// bigint); float, double and real as float64; binary, varbinary,
// the blobs and bit as []byte; everything else (char, varchar, the texts,
// json, decimal and numeric (exact, as text), enum, set, dates and times) as
// string; NULL as nil. Raw returns any column's text-protocol bytes as sent.
type Message struct {
	schema   *Schema
	values   [][]byte // the text form of each column; nil = NULL
	epoch    int64
	server   string
	received time.Time
}

// ID is the message id as streamed in column 0 (text form): what Ack takes.
func (m *Message) ID() string { return string(m.values[0]) }

// Epoch is the number of sends of this message before this delivery (0 on
// the first one): a retried message comes back with a higher epoch.
func (m *Message) Epoch() int64 { return m.epoch }

// Delivery names this delivery (ID and Epoch) for Nack and Extend.
func (m *Message) Delivery() Delivery { return Delivery{ID: m.ID(), Epoch: m.epoch} }

// Server is the server the message came from, as given to the Subscriber.
// Its ack, nack and extends go there only: ids are unique only within one
// shard.
func (m *Message) Server() string { return m.server }

// Received is when the subscriber read the message from its stream (its
// ack wait runs from about then).
func (m *Message) Received() time.Time { return m.received }

// Schema returns the table's columns.
func (m *Message) Schema() *Schema { return m.schema }

// Has reports whether the table has a column called name.
func (m *Message) Has(name string) bool { return m.schema.Index(name) >= 0 }

// IsNull reports whether the column exists and is NULL.
func (m *Message) IsNull(name string) bool {
	i := m.schema.Index(name)
	return i >= 0 && m.values[i] == nil
}

// Raw returns the column's value in MySQL's text-protocol form as streamed;
// nil when NULL or when there is no such column (tell them apart with Has).
// The slice must not be modified.
func (m *Message) Raw(name string) []byte {
	i := m.schema.Index(name)
	if i < 0 {
		return nil
	}
	return m.values[i]
}

// Text returns the column's text form as a string, and false when it is NULL
// or missing.
func (m *Message) Text(name string) (string, bool) {
	i := m.schema.Index(name)
	if i < 0 || m.values[i] == nil {
		return "", false
	}
	return string(m.values[i]), true
}

// Get returns the column's typed value (see Message): int64, uint64,
// float64, string, []byte, or nil when NULL or when there is no such column
// (tell them apart with Has).
func (m *Message) Get(name string) interface{} {
	i := m.schema.Index(name)
	if i < 0 {
		return nil
	}
	return typedValue(m.schema.fields[i].Type, m.values[i])
}

// Value returns the typed value of column i (in Schema order); nil when NULL
// or out of range.
func (m *Message) Value(i int) interface{} {
	if i < 0 || i >= len(m.values) {
		return nil
	}
	return typedValue(m.schema.fields[i].Type, m.values[i])
}

// Values returns every column's typed value by name.
func (m *Message) Values() map[string]interface{} {
	out := make(map[string]interface{}, len(m.values))
	for i, f := range m.schema.fields {
		if _, dup := out[f.Name]; !dup {
			out[f.Name] = typedValue(f.Type, m.values[i])
		}
	}
	return out
}

// The W3C Trace Context columns of the trace convention
// (docs/api.md#trace-context-from-producer-to-consumer): a message table may
// have `traceparent varchar(55)` and optionally `tracestate`, written by the
// producer in the same INSERT.
const (
	TraceParentColumn = "traceparent"
	TraceStateColumn  = "tracestate"
)

// TraceParent returns the message's `traceparent` column ("" when the table
// has none or it is NULL), unparsed.
func (m *Message) TraceParent() string {
	s, _ := m.Text(TraceParentColumn)
	return s
}

// TraceState returns the message's `tracestate` column ("" when absent).
func (m *Message) TraceState() string {
	s, _ := m.Text(TraceStateColumn)
	return s
}

// TraceContext returns the producer's trace context parsed from the
// `traceparent` and `tracestate` columns; false when there is none or it
// does not parse.
func (m *Message) TraceContext() (TraceContext, bool) {
	tp := m.TraceParent()
	if tp == "" {
		return TraceContext{}, false
	}
	tc, err := ParseTraceParent(tp)
	if err != nil {
		return TraceContext{}, false
	}
	tc.State = m.TraceState()
	return tc, true
}

// String is a short description for logs: table columns are not included.
func (m *Message) String() string {
	if m.server != "" {
		return fmt.Sprintf("message %s epoch %d from %s", m.ID(), m.epoch, m.server)
	}
	return fmt.Sprintf("message %s epoch %d", m.ID(), m.epoch)
}

var emptyValue = []byte{}

func typedValue(typ string, v []byte) interface{} {
	if v == nil {
		return nil
	}
	switch strings.ToLower(typ) {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return n
		}
		if n, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return n
		}
	case "float", "double", "real", "double precision":
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit":
		return v
	}
	return string(v)
}

// decodeRow splits a packed row into one value per column (nil for NULL).
// The values alias row.Values, which the caller must not reuse.
func decodeRow(schema *Schema, row *msgqv1.Row, server string, received time.Time) (*Message, error) {
	lengths := row.GetLengths()
	data := row.GetValues()
	if len(lengths) != len(schema.fields) {
		return nil, fmt.Errorf("malformed row: %d lengths for %d columns", len(lengths), len(schema.fields))
	}
	values := make([][]byte, len(lengths))
	offset := int64(0)
	for i, n := range lengths {
		switch {
		case n < -1:
			return nil, fmt.Errorf("malformed row: column %d has length %d", i, n)
		case n == -1:
			continue
		case n == 0:
			values[i] = emptyValue // not NULL, even when data is nil
			continue
		case n > int64(len(data))-offset:
			return nil, fmt.Errorf("malformed row: column %d overruns the %d value bytes", i, len(data))
		}
		values[i] = data[offset : offset+n : offset+n]
		offset += n
	}
	if offset != int64(len(data)) {
		return nil, fmt.Errorf("malformed row: lengths add up to %d but values has %d bytes", offset, len(data))
	}
	if values[0] == nil {
		return nil, fmt.Errorf("malformed row: the id (column 0) is NULL")
	}
	if row.GetEpoch() < 0 {
		return nil, fmt.Errorf("malformed row: negative epoch %d", row.GetEpoch())
	}
	return &Message{schema: schema, values: values, epoch: row.GetEpoch(), server: server, received: received}, nil
}
