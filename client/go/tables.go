package msgq

import (
	"time"

	"msgq.dev/client/go/internal/msgqv1"
)

// TableStatus is one message table as Client.ListTables reports it: its
// settings, whether this server sends it, and counters.
type TableStatus struct {
	Table Table
	// Loaded is false when the table failed to load; LoadError says why.
	Loaded    bool
	LoadError string
	// Paused with Client.SetPaused: nothing is sent.
	Paused bool
	// Subscribers streaming the table from this server.
	Subscribers int
	// How new messages are discovered: "binlog" or "poll".
	Discovery string
	Settings  TableSettings
	// Which msgqd sends the table when several serve it.
	Ownership Ownership
	Counters  TableCounters
}

// TableSettings are a table's directives (its vitess_message comment).
type TableSettings struct {
	AckWait        time.Duration
	PurgeAfter     time.Duration
	BatchSize      int
	CacheSize      int
	PollerInterval time.Duration
	MinBackoff     time.Duration
	MaxBackoff     time.Duration // 0 = unbounded
	MessageColumns []string
	MaxAttempts    int           // 0 = unlimited
	MaxAge         time.Duration // 0 = unlimited
	DeadRetention  time.Duration // 0 = kept until redriven or deleted
	RateLimit      float64       // sends per second; 0 = unlimited
	RateBurst      float64
	OrderBy        string // msgq_order_by column; "" when not set
	FairBy         string // msgq_fair_by column; "" when not set
	ConcurrencyBy  string // msgq_concurrency_by column; "" when not set
	Concurrency    int    // msgq_concurrency; 0 when not set
}

// Ownership is which msgqd sends a table (see docs/several-instances.md).
type Ownership struct {
	// This server's view: "owner" (it holds the lease and sends),
	// "standby" (another one does, or none yet), "off" (leases disabled:
	// it sends) or "unknown" (the lease table cannot be read; see Error).
	State string
	// The instance that holds the lease; "" when none.
	Owner string
	// When Owner took the lease and when it ends (MySQL's clock); zero when
	// unknown.
	Since   time.Time
	Expires time.Time
	// Why the lease could not be read or taken; "" otherwise.
	Error string
}

// TableCounters are a table's message counts now and its counters since
// this msgqd started serving it.
type TableCounters struct {
	Cached   int64 // queued in the server's cache
	InFlight int64 // sent and not yet settled
	Dead     int64 // dead messages; -1 until known
	// Since the server started serving the table.
	Sent        int64
	Redelivered int64 // streamed with epoch > 0 (part of Sent)
	Postponed   int64
	Acked       int64
	Nacked      int64
	Died        int64
	Purged      int64
	Polls       int64
	KeysAtLimit int64 // msgq_concurrency_by keys at their limit now
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func tableStatusFromWire(t *msgqv1.TableStatus) TableStatus {
	s, o := t.GetSettings(), t.GetOwnership()
	return TableStatus{
		Table:       Table{Keyspace: t.GetKeyspace(), Name: t.GetName()},
		Loaded:      t.GetLoaded(),
		LoadError:   t.GetError(),
		Paused:      t.GetPaused(),
		Subscribers: int(t.GetSubscribers()),
		Discovery:   t.GetDiscovery(),
		Settings: TableSettings{
			AckWait:        seconds(s.GetAckWait()),
			PurgeAfter:     seconds(s.GetPurgeAfter()),
			BatchSize:      int(s.GetBatchSize()),
			CacheSize:      int(s.GetCacheSize()),
			PollerInterval: seconds(s.GetPollerInterval()),
			MinBackoff:     seconds(s.GetMinBackoff()),
			MaxBackoff:     seconds(s.GetMaxBackoff()),
			MessageColumns: append([]string(nil), s.GetMessageCols()...),
			MaxAttempts:    int(s.GetMaxAttempts()),
			MaxAge:         seconds(s.GetMaxAge()),
			DeadRetention:  seconds(s.GetDeadRetention()),
			RateLimit:      s.GetRateLimit(),
			RateBurst:      s.GetRateBurst(),
			OrderBy:        s.GetOrderBy(),
			FairBy:         s.GetFairBy(),
			ConcurrencyBy:  s.GetConcurrencyBy(),
			Concurrency:    int(s.GetConcurrency()),
		},
		Ownership: Ownership{
			State:   o.GetState(),
			Owner:   o.GetOwner(),
			Since:   unixNanos(o.GetSince()),
			Expires: unixNanos(o.GetExpires()),
			Error:   o.GetError(),
		},
		Counters: TableCounters{
			Cached:      t.GetCached(),
			InFlight:    t.GetInFlight(),
			Dead:        t.GetDead(),
			Sent:        t.GetSent(),
			Redelivered: t.GetRedelivered(),
			Postponed:   t.GetPostponed(),
			Acked:       t.GetAcked(),
			Nacked:      t.GetNacked(),
			Died:        t.GetDied(),
			Purged:      t.GetPurged(),
			Polls:       t.GetPolls(),
			KeysAtLimit: t.GetKeysAtLimit(),
		},
	}
}

// AckWaitOf returns the ack wait of table among tables (a ListTables
// answer): the first loaded table of that name, in table.Keyspace unless it
// is empty; false when there is none or its ack wait is not positive.
func AckWaitOf(tables []TableStatus, table Table) (time.Duration, bool) {
	for _, t := range tables {
		if !t.Loaded || t.Table.Name != table.Name {
			continue
		}
		if table.Keyspace != "" && t.Table.Keyspace != table.Keyspace {
			continue
		}
		if t.Settings.AckWait <= 0 {
			return 0, false
		}
		return t.Settings.AckWait, true
	}
	return 0, false
}
