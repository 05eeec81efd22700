// Command app is an application module that requires msgq.dev/client/go
// from a checkout (go.mod's replace), vendored offline by
// client/go/vendor-debian.sh; run_tests.sh builds and vets it.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"

	msgq "msgq.dev/client/go"
)

func main() {
	sub, err := msgq.NewSubscriber([]string{"127.0.0.1:15999"}, msgq.Table{Name: "orders"},
		msgq.HandlerFunc(func(ctx context.Context, m *msgq.Message) error {
			log.Printf("%v: %s", m, m.Raw("message"))
			return nil
		}), msgq.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sub.Run(ctx); errors.Is(err, msgq.ErrUnknownTable) {
		log.Fatal("no table orders")
	} else if err != nil {
		log.Fatal(err)
	}
}
