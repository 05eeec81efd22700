package msgq

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors to test for with errors.Is. Arguments refused here (without a
// call) are plain errors wrapping ErrInvalidArgument. Errors from msgqd or
// from reaching it keep their gRPC status (status.Code(err) works) and
// match the sentinel of their code: NOT_FOUND is ErrUnknownTable,
// INVALID_ARGUMENT ErrInvalidArgument, UNAVAILABLE ErrUnavailable,
// UNAUTHENTICATED ErrUnauthenticated, PERMISSION_DENIED
// ErrPermissionDenied, DEADLINE_EXCEEDED context.DeadlineExceeded and
// CANCELLED context.Canceled.
var (
	// ErrClosed: the Client was closed, or the Subscriber has run already.
	ErrClosed = errors.New("msgq: closed")
	// ErrInvalidArgument: a malformed argument or request.
	ErrInvalidArgument = errors.New("msgq: invalid argument")
	// ErrUnknownTable: the server has no message table of that name.
	ErrUnknownTable = errors.New("msgq: unknown table")
	// ErrUnavailable: the server or its MySQL cannot be reached now; retry
	// later.
	ErrUnavailable = errors.New("msgq: unavailable")
	// ErrUnauthenticated: no valid token or client certificate.
	ErrUnauthenticated = errors.New("msgq: unauthenticated")
	// ErrPermissionDenied: the caller may not do this on this table.
	ErrPermissionDenied = errors.New("msgq: permission denied")
)

// invalidArgument is a local argument error: "msgq: invalid argument: ...".
func invalidArgument(format string, args ...interface{}) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// rpcError is an error of a gRPC call: its text and status unchanged, and
// errors.Is matching the sentinel of its code.
type rpcError struct{ err error }

func (e *rpcError) Error() string              { return e.err.Error() }
func (e *rpcError) Unwrap() error              { return e.err }
func (e *rpcError) GRPCStatus() *status.Status { return status.Convert(e.err) }

func (e *rpcError) Is(target error) bool {
	switch status.Code(e.err) {
	case codes.NotFound:
		return target == ErrUnknownTable
	case codes.InvalidArgument:
		return target == ErrInvalidArgument
	case codes.Unavailable:
		return target == ErrUnavailable
	case codes.Unauthenticated:
		return target == ErrUnauthenticated
	case codes.PermissionDenied:
		return target == ErrPermissionDenied
	case codes.DeadlineExceeded:
		return target == context.DeadlineExceeded
	case codes.Canceled:
		return target == context.Canceled
	}
	return false
}

// fromRPC wraps an error of a gRPC call as an rpcError; nil stays nil.
func fromRPC(err error) error {
	var already *rpcError
	if err == nil || errors.As(err, &already) {
		return err
	}
	return &rpcError{err: err}
}
