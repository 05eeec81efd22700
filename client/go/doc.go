// Package msgq is the Go client of msgqd (gRPC API msgq.v1.Messaging): a
// Subscriber that hands each message of a message table to a Handler and
// settles it by the handler's Result, and a Client for the unary calls.
//
//	handler := func(ctx context.Context, m *msgq.Message) msgq.Result {
//		body, ok := m.Text("message")
//		if !ok {
//			return msgq.Dead("NULL message")
//		}
//		if err := process(ctx, body); err != nil {
//			return msgq.Fail(err) // retried after the table's backoff
//		}
//		return msgq.Ack()
//	}
//	sub, err := msgq.Subscribe([]string{"127.0.0.1:15999"},
//		msgq.Table{Name: "orders"}, handler, msgq.Options{Concurrency: 4})
//	if err != nil { ... }
//	<-ctx.Done()                       // or sub.Done(): a fatal error (sub.Err())
//	sub.Close(context.Background())    // waits for handlers, flushes acks
//
// Results: Ack(); Retry(delay, reason) (0 = as soon as possible);
// RetryBackoff(reason) and Fail(err) (after the table's backoff, as a
// panicking handler); Dead(reason) (dead now; see Client.ListDead).
//
// Tracing: a table's `traceparent`/`tracestate` columns (W3C Trace Context)
// are parsed by Message.TraceContext; each handled message runs in an
// OpenTelemetry CONSUMER span parented on them, from the global
// TracerProvider (no-op until the application sets one) or
// Options.TracerProvider. Producers write TraceParentFromContext(ctx) in
// the INSERT that enqueues the message.
//
// Errors are gRPC status errors: use status.Code(err).
package msgq
