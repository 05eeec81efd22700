package msgq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"msgq.dev/client/go/internal/msgqv1"
)

// Security says how to reach a msgqd that requires TLS, client certificates
// (mTLS) or bearer tokens (its --tls_cert/--tls_key, --tls_client_ca and
// --auth_tokens_file flags). The zero value is plaintext without a token.
type Security struct {
	// PEM CA bundle that signed the server's certificate; non-empty turns TLS
	// on (the name or IP dialled must be in the server's certificate).
	CAFile string
	// PEM client certificate and key for mTLS (both or neither; need TLS).
	CertFile string
	KeyFile  string
	// Overrides the name checked in the server's certificate.
	ServerName string
	// Instead of the files: a complete TLS configuration (turns TLS on).
	TLSConfig *tls.Config
	// Bearer token, sent as `authorization: Bearer <token>` on every call
	// (also over plaintext, where it crosses the network in clear: keep
	// plaintext to loopback). Empty sends none. See ReadTokenFile.
	Token string
}

func (s Security) tls() bool { return s.CAFile != "" || s.TLSConfig != nil }

// ReadTokenFile returns the token in path: its first line without the
// surrounding white space.
func ReadTokenFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read token file: %w", err)
	}
	line := string(data)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	token := strings.TrimSpace(line)
	if token == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return token, nil
}

// bearer is a per-RPC credential adding the authorization metadata.
type bearer struct{ header string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.header}, nil
}

// RequireTransportSecurity is false so that the token goes over plaintext
// too, as the C++ and Python clients send it.
func (b bearer) RequireTransportSecurity() bool { return false }

// DialOptions returns the gRPC dial options for sec: transport credentials,
// the bearer token, and msgq's connection settings (a lost connection is
// retried after 100ms growing to 5s with jitter rather than gRPC's 1s to
// 120s, so a subscriber's own backoff is not stretched by the transport's; a
// keepalive ping every 6 minutes on an idle connection, slower than the
// 5-minute minimum gRPC servers accept by default).
func DialOptions(sec Security) ([]grpc.DialOption, error) {
	if (sec.CertFile == "") != (sec.KeyFile == "") {
		return nil, invalidArgument("a client certificate needs its key: give CertFile and KeyFile together")
	}
	if sec.CertFile != "" && !sec.tls() {
		return nil, invalidArgument("a client certificate needs TLS: give CAFile too")
	}
	if strings.ContainsAny(sec.Token, "\r\n") {
		return nil, invalidArgument("a token must be one line")
	}
	opts := []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: grpcbackoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   5 * time.Second,
			},
			MinConnectTimeout: 20 * time.Second,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:    6 * time.Minute,
			Timeout: 20 * time.Second,
		}),
	}
	if sec.tls() {
		var config *tls.Config
		if sec.TLSConfig != nil {
			config = sec.TLSConfig.Clone()
		} else {
			config = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if sec.CAFile != "" {
			pem, err := os.ReadFile(sec.CAFile)
			if err != nil {
				return nil, invalidArgument("cannot read CA file: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, invalidArgument("no PEM certificate in CA file %s", sec.CAFile)
			}
			config.RootCAs = pool
		}
		if sec.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(sec.CertFile, sec.KeyFile)
			if err != nil {
				return nil, invalidArgument("cannot load client certificate: %v", err)
			}
			config.Certificates = append(config.Certificates, cert)
		}
		if sec.ServerName != "" {
			config.ServerName = sec.ServerName
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	} else {
		opts = append(opts, grpc.WithInsecure())
	}
	if sec.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{header: "Bearer " + sec.Token}))
	}
	return opts, nil
}

// Dial opens a connection to target ("host:port" or any gRPC target) with
// sec (see DialOptions); extra options go last. It connects lazily: an
// unreachable server shows up as ErrUnavailable on the first call.
func Dial(target string, sec Security, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	if target == "" {
		return nil, invalidArgument("empty server address")
	}
	opts, err := DialOptions(sec)
	if err != nil {
		return nil, err
	}
	return grpc.Dial(target, append(opts, extra...)...)
}

// DefaultTimeout bounds each Client call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Client makes the unary calls of msgq.v1.Messaging: settling messages (Ack,
// Nack, Extend), handling dead ones (ListDead, Redrive), pausing tables and
// listing them. For receiving messages, see Subscriber.
//
// Errors (see ErrUnknownTable and the other sentinels): the server's, with
// its gRPC status code and message unchanged (status.Code(err) works);
// ErrUnavailable when the server cannot be reached (retry later);
// context.DeadlineExceeded when it did not answer in time; a plain error
// wrapping ErrInvalidArgument for arguments refused here without a call;
// ErrClosed after Close. Calls fail fast while the server is down.
//
// Safe for concurrent use.
type Client struct {
	stub    msgqv1.MessagingClient
	owned   *grpc.ClientConn
	timeout time.Duration
	closed  *atomic.Bool // shared with the copies WithTimeout makes
}

// NewClient dials target with sec; Close closes the connection.
func NewClient(target string, sec Security, extra ...grpc.DialOption) (*Client, error) {
	conn, err := Dial(target, sec, extra...)
	if err != nil {
		return nil, err
	}
	c := NewClientConn(conn)
	c.owned = conn
	return c, nil
}

// NewClientConn makes a Client over an existing connection (which it does
// not close; it may be shared, e.g. with a Subscriber).
func NewClientConn(conn grpc.ClientConnInterface) *Client {
	return &Client{stub: msgqv1.NewMessagingClient(conn), timeout: DefaultTimeout, closed: new(atomic.Bool)}
}

// WithTimeout returns a copy of c whose calls without a context deadline
// time out after d (default DefaultTimeout). The copy shares c's connection.
func (c *Client) WithTimeout(d time.Duration) *Client {
	cp := *c
	cp.timeout = d
	cp.owned = nil
	return &cp
}

// Close closes the connection if NewClient opened it; later calls of c and
// of its WithTimeout copies return ErrClosed. Idempotent.
func (c *Client) Close() error {
	if c.closed.Swap(true) || c.owned == nil {
		return nil
	}
	return c.owned.Close()
}

// ctx bounds a call by the client's timeout; ErrClosed after Close.
func (c *Client) ctx(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if c.closed.Load() {
		return nil, nil, ErrClosed
	}
	if _, ok := ctx.Deadline(); ok || c.timeout <= 0 {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	return ctx, cancel, nil
}

// Ack acknowledges the messages of table with the given ids (as streamed in
// column 0) and returns how many went from unacked to acked; unknown and
// already-acked ids are not errors. No ids: 0 without a call.
// Errors: ErrUnknownTable (NOT_FOUND), ErrInvalidArgument (malformed id,
// empty name), FAILED_PRECONDITION (the table failed to load; see
// status.Code), ErrUnavailable (server or its MySQL unreachable: retry),
// context.DeadlineExceeded; the other calls have the same table errors.
func (c *Client) Ack(ctx context.Context, table Table, ids ...string) (int64, error) {
	return c.AckGroup(ctx, table, "", ids...)
}

// AckGroup acknowledges ids for consumer group group of table
// (docs/design/consumer-groups.md): the acks are that group's alone, and
// the count is of the ids pending for it. "" is the default group (Ack).
// Errors: Ack's, and ErrUnknownTable's NOT_FOUND naming the table's groups
// for an unknown group, ErrInvalidArgument for a malformed group name.
func (c *Client) AckGroup(ctx context.Context, table Table, group string, ids ...string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	req := &msgqv1.MessageAckRequest{Ids: idsToWire(ids), Group: group}
	req.Keyspace, req.Name = tableToWire(table)
	resp, err := c.stub.MessageAck(ctx, req)
	if err != nil {
		return 0, fromRPC(err)
	}
	return resp.GetAcked(), nil
}

// NackResult counts what a Nack did.
type NackResult struct {
	Retried int64 // rows that will be sent again
	Dead    int64 // rows that died
}

// Nack hands deliveries back unprocessed, as result says: Retry(delay,
// reason) retries after delay, RetryBackoff(reason) (or Fail) after the
// table's backoff, Dead(reason) marks them dead at once. The table's
// msgq_max_attempts and msgq_max_age may turn a retry into a death. Only
// deliveries this caller still holds count (see Delivery). No deliveries:
// zero without a call; an Ack() result is ErrInvalidArgument.
func (c *Client) Nack(ctx context.Context, table Table, deliveries []Delivery, result Result) (NackResult, error) {
	return c.nack(ctx, table, "", deliveries, result)
}

// nack is Nack for consumer group group ("" = the default group).
func (c *Client) nack(ctx context.Context, table Table, group string, deliveries []Delivery, result Result) (NackResult, error) {
	if result.kind == KindAck {
		return NackResult{}, invalidArgument("nack with an ack result: use Ack")
	}
	if len(deliveries) == 0 {
		return NackResult{}, nil
	}
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return NackResult{}, err
	}
	defer cancel()
	req := &msgqv1.MessageNackRequest{
		Deliveries: deliveriesToWire(deliveries),
		Reason:     result.reason,
		Dead:       result.kind == KindDead,
		Group:      group,
	}
	req.Keyspace, req.Name = tableToWire(table)
	if result.kind == KindRetry && result.hasDelay {
		req.Delay = wrapperspb.Double(result.delay.Seconds())
	}
	resp, err := c.stub.MessageNack(ctx, req)
	if err != nil {
		return NackResult{}, fromRPC(err)
	}
	return NackResult{Retried: resp.GetRetried(), Dead: resp.GetDead()}, nil
}

// Extend keeps deliveries from being sent to anyone else for d from now
// (their time_next becomes now + d, so it can also shorten a hold) and
// returns how many moved: a delivery no longer held counts 0. No
// deliveries: 0 without a call. ErrInvalidArgument for d <= 0 (here) or
// above the server's --max_extend.
func (c *Client) Extend(ctx context.Context, table Table, deliveries []Delivery, d time.Duration) (int64, error) {
	if d <= 0 {
		return 0, invalidArgument("extend duration must be positive, got %v", d)
	}
	if len(deliveries) == 0 {
		return 0, nil
	}
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	req := &msgqv1.MessageExtendRequest{Deliveries: deliveriesToWire(deliveries), Duration: d.Seconds()}
	req.Keyspace, req.Name = tableToWire(table)
	resp, err := c.stub.MessageExtend(ctx, req)
	if err != nil {
		return 0, fromRPC(err)
	}
	return resp.GetExtended(), nil
}

// Redrive makes the dead messages with ids due now with epoch 0 and returns
// how many went from dead to due (other ids count 0). No ids: 0 without a
// call.
func (c *Client) Redrive(ctx context.Context, table Table, ids ...string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	req := &msgqv1.RedriveRequest{Ids: idsToWire(ids)}
	req.Keyspace, req.Name = tableToWire(table)
	return c.redrive(ctx, req)
}

// RedriveAll redrives every dead message of table.
func (c *Client) RedriveAll(ctx context.Context, table Table) (int64, error) {
	req := &msgqv1.RedriveRequest{All: true}
	req.Keyspace, req.Name = tableToWire(table)
	return c.redrive(ctx, req)
}

func (c *Client) redrive(ctx context.Context, req *msgqv1.RedriveRequest) (int64, error) {
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	resp, err := c.stub.Redrive(ctx, req)
	if err != nil {
		return 0, fromRPC(err)
	}
	return resp.GetRedriven(), nil
}

// DeadMessage is one dead message of ListDead.
type DeadMessage struct {
	ID string
	// Sends before it died.
	Epoch int64
	// The last failure's reason; "" when the table has no last_error column.
	LastError string
	// When it died and was first enqueued; zero when the table has no
	// time_dead / time_created column.
	TimeDead    time.Time
	TimeCreated time.Time
}

func unixNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// ListDead returns one page of the dead messages of table, by id: at most
// limit (0 = the server's default of 100; capped at 10000) with ids after
// afterID ("" = from the first; pass the last id of the previous page).
func (c *Client) ListDead(ctx context.Context, table Table, limit int, afterID string) ([]DeadMessage, error) {
	if limit < 0 || limit > math.MaxInt32 {
		return nil, invalidArgument("dead message limit out of range: %d", limit)
	}
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	req := &msgqv1.ListDeadRequest{Limit: int32(limit), AfterId: idToWire(afterID)}
	req.Keyspace, req.Name = tableToWire(table)
	resp, err := c.stub.ListDead(ctx, req)
	if err != nil {
		return nil, fromRPC(err)
	}
	out := make([]DeadMessage, len(resp.GetMessages()))
	for i, m := range resp.GetMessages() {
		out[i] = DeadMessage{
			ID:          idFromWire(m.GetId()),
			Epoch:       m.GetEpoch(),
			LastError:   m.GetLastError(),
			TimeDead:    unixNanos(m.GetTimeDead()),
			TimeCreated: unixNanos(m.GetTimeCreated()),
		}
	}
	return out, nil
}

// ListTables returns every message table of the server's databases, loaded
// or not, in the server's order, with its settings and counters.
func (c *Client) ListTables(ctx context.Context) ([]TableStatus, error) {
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	resp, err := c.stub.ListTables(ctx, &msgqv1.ListTablesRequest{})
	if err != nil {
		return nil, fromRPC(err)
	}
	out := make([]TableStatus, len(resp.GetTables()))
	for i, t := range resp.GetTables() {
		out[i] = tableStatusFromWire(t)
	}
	return out, nil
}

// SetPaused pauses (paused) or resumes sending table on every msgqd serving
// it (MySQL keeps the state). Pausing a paused table is not an error.
func (c *Client) SetPaused(ctx context.Context, table Table, paused bool) error {
	ctx, cancel, err := c.ctx(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	req := &msgqv1.SetPausedRequest{Paused: paused}
	req.Keyspace, req.Name = tableToWire(table)
	_, err = c.stub.SetPaused(ctx, req)
	return fromRPC(err)
}
