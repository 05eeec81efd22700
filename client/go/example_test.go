package msgq_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	msgq "msgq.dev/client/go"
)

// The examples without an Output comment need a msgqd to talk to: go test
// compiles them and does not run them.

func process(ctx context.Context, body string) error { return nil }

func Example() {
	handler := func(ctx context.Context, m *msgq.Message) msgq.Result {
		body, ok := m.Text("message")
		if !ok {
			return msgq.Dead("NULL message") // dead now, with the reason
		}
		if err := process(ctx, body); err != nil {
			return msgq.Fail(err) // retried after the table's backoff
		}
		return msgq.Ack()
	}
	sub, err := msgq.NewSubscriber([]string{"127.0.0.1:15999"},
		msgq.Table{Keyspace: "app", Name: "orders"}, handler,
		msgq.Options{Concurrency: 4,
			// Say each retry (server down, ...).
			OnStreamError: func(server string, err error, retryIn time.Duration) {
				log.Printf("msgq: %s: %v; retrying in %.1f s", server, err, retryIn.Seconds())
			}})
	if err != nil {
		log.Fatalf("msgq: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Until SIGINT or SIGTERM (then it drains and returns nil), or an error
	// that retrying cannot fix (unknown table, refused token): exit 1 with it.
	if err := sub.Run(ctx); err != nil {
		log.Fatalf("msgq: %v", err)
	}
}

// Several servers (fan-in, e.g. one msgqd per shard), TLS and a token:
// each message is settled on the server that sent it.
func ExampleNewSubscriber() {
	token, err := msgq.ReadTokenFile("/etc/msgq/orders.token")
	if err != nil {
		log.Fatal(err)
	}
	sub, err := msgq.NewSubscriber([]string{"db1:15999", "db2:15999"},
		msgq.Table{Keyspace: "app", Name: "orders"},
		msgq.HandlerFunc(func(ctx context.Context, m *msgq.Message) error {
			var order struct{ ID, Total int64 }
			if err := json.Unmarshal(m.Raw("message"), &order); err != nil {
				return err // retried with the table's backoff
			}
			return nil // acked
		}),
		msgq.Options{
			Concurrency: 8,
			MaxUnacked:  100, // prefetch per server
			Security:    msgq.Security{CAFile: "/etc/msgq/ca.pem", Token: token},
			OnStreamError: func(server string, err error, retryIn time.Duration) {
				log.Printf("%s: %v; reconnecting in %v", server, err, retryIn)
			},
		})
	if err != nil {
		log.Fatal(err)
	}
	switch err := sub.Run(context.Background()); {
	case errors.Is(err, msgq.ErrUnknownTable):
		log.Fatal("no table app.orders on the servers")
	case errors.Is(err, msgq.ErrUnauthenticated), errors.Is(err, msgq.ErrPermissionDenied):
		log.Fatalf("check the token: %v", err)
	case err != nil:
		log.Fatal(err)
	}
}

// Arguments refused before any call are plain errors wrapping
// ErrInvalidArgument.
func Example_errors() {
	_, err := msgq.NewSubscriber(nil, msgq.Table{Name: "orders"},
		func(context.Context, *msgq.Message) msgq.Result { return msgq.Ack() }, msgq.Options{})
	fmt.Println(errors.Is(err, msgq.ErrInvalidArgument))
	fmt.Println(err)
	// Output:
	// true
	// msgq: invalid argument: no servers
}

func ExampleRetry() {
	fmt.Println(msgq.Retry(30*time.Second, "backend down"))
	fmt.Println(msgq.RetryBackoff("backend down"))
	fmt.Println(msgq.Fail(errors.New("timeout")))
	fmt.Println(msgq.Fail(nil))
	fmt.Println(msgq.Dead("malformed"))
	// Output:
	// retry(delay=30s, reason="backend down")
	// retry(backoff, reason="backend down")
	// retry(backoff, reason="timeout")
	// ack
	// dead(reason="malformed")
}

func ExampleTable_String() {
	fmt.Println(msgq.Table{Name: "orders"})
	fmt.Println(msgq.Table{Keyspace: "app", Name: "orders"})
	// Output:
	// orders
	// app.orders
}

func ExampleClient_ListDead() {
	c, err := msgq.NewClient("127.0.0.1:15999", msgq.Security{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	table := msgq.Table{Name: "orders"}
	// Page through the dead messages and redrive the ones that timed out.
	after := ""
	for page := 0; page < 1000; page++ {
		dead, err := c.ListDead(ctx, table, 100, after)
		if err != nil {
			log.Fatal(err)
		}
		if len(dead) == 0 {
			break
		}
		for _, d := range dead {
			if d.LastError == "timeout" {
				if _, err := c.Redrive(ctx, table, d.ID); err != nil {
					log.Fatal(err)
				}
			}
		}
		after = dead[len(dead)-1].ID
	}
}

func ExampleClient_ListTables() {
	c, err := msgq.NewClient("127.0.0.1:15999", msgq.Security{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	tables, err := c.ListTables(context.Background())
	if errors.Is(err, msgq.ErrUnavailable) {
		log.Fatal("msgqd is down")
	} else if err != nil {
		log.Fatal(err)
	}
	for _, t := range tables {
		fmt.Printf("%s: ack wait %v, %d in flight, %d dead\n",
			t.Table, t.Settings.AckWait, t.Counters.InFlight, t.Counters.Dead)
	}
}

func ExampleAckWaitOf() {
	tables := []msgq.TableStatus{
		{Table: msgq.Table{Keyspace: "app", Name: "orders"}, Loaded: true,
			Settings: msgq.TableSettings{AckWait: 30 * time.Second}},
		{Table: msgq.Table{Keyspace: "app", Name: "broken"}, LoadError: "no time_next column"},
	}
	fmt.Println(msgq.AckWaitOf(tables, msgq.Table{Name: "orders"}))
	fmt.Println(msgq.AckWaitOf(tables, msgq.Table{Keyspace: "app", Name: "broken"}))
	// Output:
	// 30s true
	// 0s false
}

func ExampleParseTraceParent() {
	tc, err := msgq.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tc.TraceIDString(), tc.SpanIDString(), tc.Sampled())
	_, err = msgq.ParseTraceParent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01")
	fmt.Println(err)
	// Output:
	// 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 true
	// invalid traceparent "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": not lower-case hex
}

// A producer writes the traceparent of its current span in the INSERT
// that enqueues the message.
func ExampleTraceParentFromContext() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	fmt.Println(msgq.TraceParentFromContext(ctx))
	fmt.Printf("%q\n", msgq.TraceParentFromContext(context.Background()))
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// ""
}

// The handler's work commits in the consumer's own database together with
// the message's inbox row, so a redelivered message has no second effect.
func ExampleInbox_Handler() {
	db, err := sql.Open("mysql", "billing@tcp(billing-db:3306)/billing")
	if err != nil {
		log.Fatal(err)
	}
	inbox, err := msgq.NewInbox(db, msgq.InboxOptions{Source: "prod"})
	if err != nil {
		log.Fatal(err)
	}
	table := msgq.Table{Name: "transfers"}
	handler := inbox.Handler(table, func(ctx context.Context, m *msgq.Message, tx *sql.Tx) msgq.Result {
		var t struct{ From, To, Amount int64 }
		if err := json.Unmarshal(m.Raw("message"), &t); err != nil {
			return msgq.Dead(err.Error())
		}
		_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance - ? WHERE id = ?", t.Amount, t.From)
		if err == nil {
			_, err = tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + ? WHERE id = ?", t.Amount, t.To)
		}
		return msgq.Fail(err) // nil: commit, then ack; an error: rolled back, retried
	})
	sub, err := msgq.NewSubscriber([]string{"msgq:15999"}, table, handler, msgq.Options{Concurrency: 4})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(sub.Run(context.Background()))
}

// The order and its message commit together, or neither does.
func ExampleEnqueue() {
	db, err := sql.Open("mysql", "shop@tcp(shop-db:3306)/shop")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background() // with OpenTelemetry: the span's context
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback() // no-op after Commit
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id, total) VALUES (?, ?)", 42, 1999); err != nil {
		log.Fatal(err)
	}
	id, err := msgq.Enqueue(ctx, tx, msgq.Table{Name: "order_events"}, msgq.Outgoing{
		Body:    map[string]interface{}{"order": 42, "total": 1999}, // JSON-encoded
		Key:     "customer-7",
		Type:    "order.placed",
		Headers: map[string]string{"source": "web"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	log.Printf("enqueued %s", id) // a UUIDv7
}
