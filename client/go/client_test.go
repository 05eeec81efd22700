package msgq

// Client calls, TLS and bearer tokens against a real msgqd.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"msgq.dev/client/go/internal/msgqv1"
)

// firstDelivery opens a raw MessageStream of table and returns the first
// row's delivery (leaving the message in flight with this caller).
func firstDelivery(t *testing.T, c *Client, table Table) Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ks, name := tableToWire(table)
	stream, err := c.stub.MessageStream(ctx, &msgqv1.MessageStreamRequest{Keyspace: ks, Name: name, MaxUnacked: 1})
	if err != nil {
		t.Fatal(err)
	}
	var schema *Schema
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if schema == nil {
			if schema, err = newSchema(resp.GetFields()); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range resp.GetRows() {
			m, err := decodeRow(schema, r, "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return m.Delivery()
		}
	}
}

func TestClientCalls(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "calls", "vt_ack_wait=30", "")
	insertRange(t, db, "calls", 1, 1)
	srv := serve(t, db)
	table := Table{Keyspace: db, Name: "calls"}
	c, err := NewClient(srv.addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	waitLoaded(t, srv.addr, table)

	tables, err := c.ListTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := AckWaitOf(tables, table); !ok || w != 30*time.Second {
		t.Errorf("AckWaitOf = %v %v in %v", w, ok, tables)
	}
	var calls *TableStatus
	for i := range tables {
		if tables[i].Table == table {
			calls = &tables[i]
		}
	}
	if calls == nil {
		t.Fatalf("ListTables has no %v: %+v", table, tables)
	}
	if !calls.Loaded || calls.LoadError != "" || calls.Paused {
		t.Errorf("ListTables: %+v", *calls)
	}
	wantSettings := TableSettings{AckWait: 30 * time.Second, PurgeAfter: 86400 * time.Second, BatchSize: 10,
		CacheSize: 10000, PollerInterval: 500 * time.Millisecond}
	gotSettings := calls.Settings
	gotSettings.MinBackoff, gotSettings.MaxBackoff, gotSettings.MessageColumns = 0, 0, nil
	if !reflect.DeepEqual(gotSettings, wantSettings) {
		t.Errorf("settings %+v, want %+v", gotSettings, wantSettings)
	}

	d := firstDelivery(t, c, table)
	if d != (Delivery{ID: "1", Epoch: 0}) {
		t.Fatalf("delivery %+v", d)
	}
	if n, err := c.Extend(ctx, table, []Delivery{d}, time.Minute); err != nil || n != 1 {
		t.Errorf("Extend = %d, %v", n, err)
	}
	if n, err := c.Extend(ctx, table, []Delivery{{ID: "1", Epoch: 5}}, time.Minute); err != nil || n != 0 {
		t.Errorf("Extend of a stale delivery = %d, %v", n, err)
	}
	if r, err := c.Nack(ctx, table, []Delivery{d}, Dead("nope")); err != nil || r != (NackResult{Dead: 1}) {
		t.Errorf("Nack dead = %+v, %v", r, err)
	}
	dead, err := c.ListDead(ctx, table, 10, "")
	if err != nil || len(dead) != 1 || dead[0].ID != "1" || dead[0].LastError != "nope" {
		t.Errorf("ListDead = %+v, %v", dead, err)
	}
	if after, err := c.ListDead(ctx, table, 10, "1"); err != nil || len(after) != 0 {
		t.Errorf("ListDead after 1 = %+v, %v", after, err)
	}
	if n, err := c.RedriveAll(ctx, table); err != nil || n != 1 {
		t.Errorf("RedriveAll = %d, %v", n, err)
	}
	d = firstDelivery(t, c, table)
	if d.Epoch != 0 {
		t.Errorf("redriven delivery %+v", d)
	}
	if r, err := c.Nack(ctx, table, []Delivery{d}, Retry(0, "again")); err != nil || r != (NackResult{Retried: 1}) {
		t.Errorf("Nack retry = %+v, %v", r, err)
	}
	d = firstDelivery(t, c, table)
	if d.Epoch != 1 {
		t.Errorf("retried delivery %+v, want epoch 1", d)
	}
	if n, err := c.Ack(ctx, table, d.ID, "999"); err != nil || n != 1 {
		t.Errorf("Ack = %d, %v", n, err)
	}
	if n, err := c.Ack(ctx, table, d.ID); err != nil || n != 0 {
		t.Errorf("second Ack = %d, %v", n, err)
	}

	// Pause: nothing is sent until resumed.
	if err := c.SetPaused(ctx, table, true); err != nil {
		t.Fatal(err)
	}
	tables, _ = c.ListTables(ctx)
	for _, ts := range tables {
		if ts.Table == table && !ts.Paused {
			t.Error("not paused in ListTables")
		}
	}
	insertRange(t, db, "calls", 2, 2)
	got := make(chan *Message, 1)
	sub, err := subscribe([]string{srv.addr}, table, func(ctx context.Context, m *Message) Result {
		got <- m
		return Ack()
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSub(t, sub)
	select {
	case m := <-got:
		t.Fatalf("paused table sent %v", m)
	case <-time.After(700 * time.Millisecond):
	}
	if err := c.SetPaused(ctx, table, false); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m.ID() != "2" {
			t.Errorf("got %v", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("resumed table sent nothing")
	}

	// Errors: the server's keep their gRPC status code and match the
	// sentinels; arguments refused here are plain errors.
	serverErr := func(name string, err error, sentinel error, code codes.Code) {
		t.Helper()
		if !errors.Is(err, sentinel) || status.Code(err) != code {
			t.Errorf("%s: %v (code %v), want %v and %v", name, err, status.Code(err), sentinel, code)
		}
	}
	_, err = c.Ack(ctx, Table{Keyspace: db, Name: "nope"}, "1")
	serverErr("Ack on an unknown table", err, ErrUnknownTable, codes.NotFound)
	_, err = c.Ack(ctx, table, "abc")
	serverErr("Ack of a malformed id", err, ErrInvalidArgument, codes.InvalidArgument)
	serverErr("SetPaused without a name", c.SetPaused(ctx, Table{Keyspace: db}, true), ErrInvalidArgument,
		codes.InvalidArgument)
	localErr := func(name string, err error, want string) {
		t.Helper()
		if _, isStatus := status.FromError(err); !errors.Is(err, ErrInvalidArgument) || isStatus || err.Error() != want {
			t.Errorf("%s: %q (a gRPC status: %v), want the plain error %q", name, err, isStatus, want)
		}
	}
	_, err = c.Extend(ctx, table, []Delivery{d}, 0)
	localErr("Extend 0", err, "msgq: invalid argument: extend duration must be positive, got 0s")
	_, err = c.Nack(ctx, table, []Delivery{d}, Ack())
	localErr("Nack with Ack", err, "msgq: invalid argument: nack with an ack result: use Ack")
	_, err = c.ListDead(ctx, table, -1, "")
	localErr("ListDead -1", err, "msgq: invalid argument: dead message limit out of range: -1")
	if n, err := c.Ack(ctx, table); n != 0 || err != nil {
		t.Errorf("Ack of nothing: %d %v", n, err)
	}
	closed, err := NewClient(srv.addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Ack(ctx, table, "1"); err != ErrClosed {
		t.Errorf("Ack after Close: %v, want ErrClosed", err)
	}
	if _, err := closed.WithTimeout(time.Second).ListTables(ctx); err != ErrClosed {
		t.Errorf("ListTables of a copy after Close: %v, want ErrClosed", err)
	}
	down, _ := NewClient("127.0.0.1:1", Security{})
	defer down.Close()
	_, err = down.ListTables(ctx)
	serverErr("unreachable server", err, ErrUnavailable, codes.Unavailable)
}

// makeCertificates writes, in dir, ca.pem signing server.pem (for IP
// 127.0.0.1) and client.pem, each with its .key, as
// tests/security_fixture.h's MakeTestCertificates does.
func makeCertificates(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "san.ext"), []byte("subjectAltName=IP:127.0.0.1,DNS:localhost\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := [][]string{
		{"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=msgq-test-ca"},
		{"req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=msgqd-1"},
		{"x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext"},
		{"req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=reader"},
		{"x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "client.pem", "-days", "2"},
	}
	for _, args := range steps {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestTLSAndBearerToken(t *testing.T) {
	db := newDatabase(t)
	createTable(t, db, "secure", "", "")
	insertRange(t, db, "secure", 1, 3)
	dir, err := os.MkdirTemp(env.tmp, "certs-")
	if err != nil {
		t.Fatal(err)
	}
	makeCertificates(t, dir)
	const token = "s3cret-token"
	sum := sha256.Sum256([]byte(token))
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# test tokens\n"+hex.EncodeToString(sum[:])+" reader\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "reader.token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	readToken, err := ReadTokenFile(tokenFile)
	if err != nil || readToken != token {
		t.Fatalf("ReadTokenFile = %q, %v", readToken, err)
	}
	pem := func(name string) string { return filepath.Join(dir, name) }
	table := Table{Keyspace: db, Name: "secure"}
	ctx := context.Background()

	// TLS and tokens: a call needs the right token.
	tokenSrv := serve(t, db, "--tls_cert="+pem("server.pem"), "--tls_key="+pem("server.key"),
		"--auth_tokens_file="+tokens)
	call := func(addr string, sec Security) error {
		c, err := NewClient(addr, sec)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.ListTables(ctx)
		return err
	}
	if err := call(tokenSrv.addr, Security{CAFile: pem("ca.pem"), Token: readToken}); err != nil {
		t.Errorf("TLS + token: %v", err)
	}
	for name, tc := range map[string]struct {
		sec  Security
		code codes.Code
	}{
		"no token":      {Security{CAFile: pem("ca.pem")}, codes.Unauthenticated},
		"wrong token":   {Security{CAFile: pem("ca.pem"), Token: "guess"}, codes.Unauthenticated},
		"plaintext":     {Security{Token: token}, codes.Unavailable},
		"untrusted CA":  {Security{CAFile: pem("client.pem"), Token: token}, codes.Unavailable},
		"name mismatch": {Security{CAFile: pem("ca.pem"), Token: token, ServerName: "elsewhere"}, codes.Unavailable},
	} {
		if err := call(tokenSrv.addr, tc.sec); status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %v", name, err, tc.code)
		}
	}

	// A subscriber with a wrong token ends with UNAUTHENTICATED; with the
	// right one it receives and acks over TLS.
	bad, err := subscribe([]string{tokenSrv.addr}, table, func(context.Context, *Message) Result { return Ack() },
		Options{Security: Security{CAFile: pem("ca.pem"), Token: "guess"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-bad.Done():
		if !errors.Is(bad.Err(), ErrUnauthenticated) || status.Code(bad.Err()) != codes.Unauthenticated {
			t.Errorf("wrong token: Run = %v", bad.Err())
		}
	case <-time.After(20 * time.Second):
		t.Error("a wrong token did not end the subscription")
	}
	sub, err := subscribe([]string{tokenSrv.addr}, table, func(context.Context, *Message) Result { return Ack() },
		Options{Security: Security{CAFile: pem("ca.pem"), Token: token}})
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(20*time.Second, func() bool { return acked(t, db, "secure") == 3 }) {
		t.Errorf("acked %d of 3 over TLS with a token (err %v)", acked(t, db, "secure"), sub.Err())
	}
	closeSub(t, sub)
	tokenSrv.stop(syscall.SIGTERM)

	// Tokens over plaintext (loopback): the token goes without TLS too.
	plainSrv := serve(t, db, "--auth_tokens_file="+tokens)
	if err := call(plainSrv.addr, Security{Token: token}); err != nil {
		t.Errorf("plaintext + token: %v", err)
	}
	if err := call(plainSrv.addr, Security{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("plaintext without a token: %v, want UNAUTHENTICATED", err)
	}
	plainSrv.stop(syscall.SIGTERM)

	// mTLS: a client certificate signed by the CA is required; with it (and
	// no token) the caller is known by its certificate.
	mtlsSrv := serve(t, db, "--tls_cert="+pem("server.pem"), "--tls_key="+pem("server.key"),
		"--tls_client_ca="+pem("ca.pem"), "--auth_tokens_file="+tokens)
	if err := call(mtlsSrv.addr, Security{CAFile: pem("ca.pem"), CertFile: pem("client.pem"), KeyFile: pem("client.key")}); err != nil {
		t.Errorf("mTLS: %v", err)
	}
	if err := call(mtlsSrv.addr, Security{CAFile: pem("ca.pem"), CertFile: pem("client.pem"), KeyFile: pem("client.key"), Token: token}); err != nil {
		t.Errorf("mTLS + token: %v", err)
	}
	if err := call(mtlsSrv.addr, Security{CAFile: pem("ca.pem"), Token: token}); status.Code(err) != codes.Unavailable {
		t.Errorf("no client certificate: %v, want UNAVAILABLE", err)
	}

	// Arguments refused before dialling.
	for name, sec := range map[string]Security{
		"cert without key": {CAFile: pem("ca.pem"), CertFile: pem("client.pem")},
		"cert without TLS": {CertFile: pem("client.pem"), KeyFile: pem("client.key")},
		"missing CA":       {CAFile: pem("nope.pem")},
		"two-line token":   {Token: "a\nb"},
	} {
		if _, err := NewClient("127.0.0.1:1", sec); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}
