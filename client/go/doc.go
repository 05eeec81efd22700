// Package msgq is the Go client of msgqd (gRPC API msgq.v1.Messaging): a
// Subscriber that hands each message of a message table to a Handler and
// settles it by the handler's Result, a Client for the unary calls, an
// Inbox for effectively-once work in the consumer's own database, and
// Enqueue for producers (an INSERT in the application's own transaction).
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
//	sub, err := msgq.NewSubscriber([]string{"127.0.0.1:15999"},
//		msgq.Table{Name: "orders"}, handler, msgq.Options{Concurrency: 4})
//	if err != nil { ... }
//	// Until ctx ends (then it drains: running handlers finish, acks are
//	// flushed) or a fatal error such as msgq.ErrUnknownTable.
//	err = sub.Run(ctx)
//
// Results: Ack(); Retry(delay, reason) (0 = as soon as possible);
// RetryBackoff(reason) and Fail(err) (after the table's backoff, as a
// panicking handler); Dead(reason) (dead now; see Client.ListDead).
//
// Errors: test with errors.Is for ErrClosed, ErrInvalidArgument,
// ErrUnknownTable, ErrUnavailable, ErrUnauthenticated and
// ErrPermissionDenied. Arguments refused locally are plain errors; the
// server's keep their gRPC status (status.Code(err)).
//
// Tracing: a table's `traceparent`/`tracestate` columns (W3C Trace Context)
// are parsed by Message.TraceContext; each handled message runs in an
// OpenTelemetry CONSUMER span parented on them, from the global
// TracerProvider (no-op until the application sets one) or
// Options.TracerProvider. Producers write TraceParentFromContext(ctx) in
// the INSERT that enqueues the message.
package msgq
