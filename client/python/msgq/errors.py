"""The package's exceptions: every error msgq raises is a msgq.MsgqError.

    try:
        client.ack("orders", ["7"])
    except msgq.errors.UnknownTable:      # NOT_FOUND: no such message table
        ...
    except msgq.errors.Unavailable:       # retry later
        ...

Errors from the server are ServerError subclasses chosen by the gRPC status
code; they are also grpc.RpcError with code() and details(), so code that
catches grpc.RpcError keeps working. ProtocolError is a stream that breaks
the MessageStream contract; ClosedError a call on a closed Client.
"""

from __future__ import annotations

from typing import Dict, Type

import grpc


class MsgqError(Exception):
    """Base class of every error the msgq package raises."""


class ProtocolError(MsgqError):
    """The server sent something that breaks the MessageStream contract."""


class ClosedError(MsgqError):
    """A call on a Client or subscriber that was closed."""


# grpc ships no type information: RpcError is Any to mypy.
class ServerError(MsgqError, grpc.RpcError):  # type: ignore[misc]
    """A call failed with gRPC status `code()` and message `details()`."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__("%s: %s" % (code.name, details))
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class UnknownTable(ServerError):
    """NOT_FOUND: the server serves no message table of that name."""


class Unavailable(ServerError):
    """UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED or ABORTED: the
    server is down, busy or timed out; retrying later may work."""


class Unauthenticated(ServerError):
    """UNAUTHENTICATED: no token, or one the server does not accept."""


class PermissionDenied(ServerError):
    """PERMISSION_DENIED: the token may not do this on this table."""


class InvalidArgument(ServerError):
    """INVALID_ARGUMENT: the server refused a malformed request."""


class FailedPrecondition(ServerError):
    """FAILED_PRECONDITION: the table is not in a state for this call (not
    loaded, or owned by another instance)."""


_BY_CODE: Dict[grpc.StatusCode, Type[ServerError]] = {
    grpc.StatusCode.NOT_FOUND: UnknownTable,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
    grpc.StatusCode.RESOURCE_EXHAUSTED: Unavailable,
    grpc.StatusCode.ABORTED: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
}


def from_rpc(error: grpc.RpcError) -> ServerError:
    """The ServerError for a failed gRPC call (`error` as is when it is one
    already). Codes without a class of their own give a ServerError."""
    if isinstance(error, ServerError):
        return error
    code = error.code() if hasattr(error, "code") else None
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return _BY_CODE.get(code, ServerError)(code, details or "")
