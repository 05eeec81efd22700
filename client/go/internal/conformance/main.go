// Command conformance is the Go client's driver of the client conformance
// suite (client/conformance/README.md):
//
//	conformance SERVER TABLE SCENARIO_JSON
//
// runs the driver part of one scenario of client/conformance/scenarios.json
// with msgq.Subscriber (and msgq.Enqueue on a database/sql transaction) and
// prints one JSON line: the deliveries (id, epoch, seconds since the
// first), the handlers finished when Run returned, the ids enqueued.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	msgq "msgq.dev/client/go"
)

type scenario struct {
	Mode             string  `json:"mode"`
	Handler          string  `json:"handler"`
	Delay            float64 `json:"delay"`
	Sleep            float64 `json:"sleep"`
	Concurrency      int     `json:"concurrency"`
	StopAfter        *int    `json:"stop_after"`
	CloseWhenStarted int     `json:"close_when_started"`
	Timeout          float64 `json:"timeout"`
	MySQLSocket      string  `json:"mysql_socket"`
	Database         string  `json:"database"`
}

type delivery struct {
	ID    string  `json:"id"`
	Epoch int64   `json:"epoch"`
	T     float64 `json:"t"`
}

type output struct {
	Enqueued            map[string]string `json:"enqueued,omitempty"`
	Deliveries          []delivery        `json:"deliveries"`
	FinishedBeforeClose int               `json:"finished_before_close"`
	TimedOut            bool              `json:"timed_out,omitempty"`
	Error               string            `json:"error,omitempty"`
}

// errorKind is err's kind, as scenarios.json names it.
func errorKind(err error) string {
	for _, k := range []struct {
		target error
		kind   string
	}{
		{msgq.ErrUnknownTable, "unknown_table"},
		{msgq.ErrUnauthenticated, "unauthenticated"},
		{msgq.ErrPermissionDenied, "permission_denied"},
		{msgq.ErrInvalidArgument, "invalid_argument"},
		{msgq.ErrUnavailable, "unavailable"},
	} {
		if errors.Is(err, k.target) {
			return k.kind
		}
	}
	return "other: " + err.Error()
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func produce(sc scenario, table string) (map[string]string, error) {
	db, err := sql.Open("mysql", fmt.Sprintf("root@unix(%s)/%s", sc.MySQLSocket, sc.Database))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ids := map[string]string{}
	for _, name := range []string{"committed", "rolled_back"} {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		id, err := msgq.Enqueue(ctx, tx, msgq.Table{Name: table}, msgq.Outgoing{Body: map[string]string{"conformance": name}})
		if err != nil {
			tx.Rollback()
			return nil, err
		}
		ids[name] = id
		if name == "committed" {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func consume(sc scenario, server, table string, out *output) error {
	var mu sync.Mutex
	var first time.Time
	seen := map[string]bool{}
	started, finished := 0, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopLocked := func() {
		if (sc.StopAfter != nil && finished >= *sc.StopAfter) ||
			(sc.StopAfter == nil && started >= sc.CloseWhenStarted) {
			cancel()
		}
	}
	outcome := func(again bool) msgq.Result {
		switch sc.Handler {
		case "ack", "sleep_ack":
			return msgq.Ack()
		case "retry_once":
			if again {
				return msgq.Ack()
			}
			return msgq.Retry(seconds(sc.Delay), "conformance retry")
		case "throw_once":
			if again {
				return msgq.Ack()
			}
			return msgq.Fail(errors.New("conformance error"))
		case "dead":
			return msgq.Dead("conformance dead")
		}
		panic("unknown handler " + sc.Handler)
	}
	handler := func(_ context.Context, m *msgq.Message) msgq.Result {
		mu.Lock()
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		t := math.Round(now.Sub(first).Seconds()*1000) / 1000
		out.Deliveries = append(out.Deliveries, delivery{ID: m.ID(), Epoch: m.Epoch(), T: t})
		started++
		again := seen[m.ID()]
		seen[m.ID()] = true
		stopLocked()
		mu.Unlock()
		defer func() {
			mu.Lock()
			finished++
			stopLocked()
			mu.Unlock()
		}()
		if sc.Handler == "sleep_ack" {
			time.Sleep(seconds(sc.Sleep))
		}
		return outcome(again)
	}
	sub, err := msgq.NewSubscriber([]string{server}, msgq.Table{Name: table}, handler,
		msgq.Options{Concurrency: sc.Concurrency, NoTracing: true})
	if err != nil {
		return err
	}
	timer := time.AfterFunc(seconds(sc.Timeout), func() {
		mu.Lock()
		out.TimedOut = true
		mu.Unlock()
		cancel()
	})
	defer timer.Stop()
	if err := sub.Run(ctx); err != nil {
		out.Error = errorKind(err)
	}
	mu.Lock()
	out.FinishedBeforeClose = finished
	mu.Unlock()
	return nil
}

func run() error {
	if len(os.Args) != 4 {
		return errors.New("usage: conformance SERVER TABLE SCENARIO_JSON")
	}
	server, table := os.Args[1], os.Args[2]
	var sc scenario
	if err := json.Unmarshal([]byte(os.Args[3]), &sc); err != nil {
		return err
	}
	out := output{Deliveries: []delivery{}}
	if sc.Mode == "produce" {
		ids, err := produce(sc, table)
		if err != nil {
			return err
		}
		out.Enqueued = ids
	}
	if err := consume(sc, server, table, &out); err != nil {
		return err
	}
	line, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}
