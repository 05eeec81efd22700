"""msgq-consume: print the messages of a msgq table as JSON lines.

Subscribes to one message table of msgqd and prints each message as one
JSON object per line, in the same format as `msgq tail --json`:
{"id":1,"message":"hello"}, numeric columns as numbers, NULL as null, bytes
that are not UTF-8 as Latin-1. After printing the rows of a streamed batch
it acknowledges them in one MessageAck (unless --no-ack). With several
servers (--server A,B) it streams from all of them at once and acks each
message on the server it came from.

TLS: --tls_ca (and --tls_cert/--tls_key for a client certificate). A bearer
token: --token_file, or the environment variable MSGQ_TOKEN (never a flag,
so it does not show in ps).

Exit codes: 0 done (--count reached or Ctrl-C), 1 other error, 2 usage,
3 server unreachable, 4 table not found.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, List, Optional

import grpc

from msgq.consume import LOG_PREFIX
from msgq.errors import ProtocolError
from msgq.message import Message
from msgq.subscriber import TLS, Subscriber

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_NOT_FOUND = range(5)


def _exit_code(code: grpc.StatusCode) -> int:
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return EXIT_UNAVAILABLE
    if code == grpc.StatusCode.NOT_FOUND:
        return EXIT_NOT_FOUND
    return EXIT_ERROR


def main(argv: Optional[List[str]] = None, prog: str = "msgq-consume") -> int:
    """Runs the command line `argv` (default: sys.argv[1:]); returns the
    exit code."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Print the messages of a msgq table as JSON lines, "
                    "acknowledging each streamed batch.")
    parser.add_argument("table", metavar="TABLE")
    parser.add_argument("--server", default="127.0.0.1:15999",
                        help="msgqd address, or several separated by commas "
                             "(default: %(default)s)")
    parser.add_argument("--keyspace", default="",
                        help="keyspace (database); empty = server default")
    parser.add_argument("--count", type=int, default=0, metavar="N",
                        help="exit after N messages (default: no limit)")
    parser.add_argument("--no-ack", dest="ack", action="store_false",
                        help="do not acknowledge (peek)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="deadline of each MessageAck (default: 10)")
    parser.add_argument("--tls_ca", metavar="PEM",
                        help="use TLS, trusting these CA certificates")
    parser.add_argument("--tls_cert", metavar="PEM",
                        help="client certificate (with --tls_key; mTLS)")
    parser.add_argument("--tls_key", metavar="PEM",
                        help="client certificate's private key")
    parser.add_argument("--tls_server_name", metavar="NAME",
                        help="name to expect in the server's certificate")
    parser.add_argument("--token_file", metavar="PATH",
                        help="bearer token file (default: $MSGQ_TOKEN)")
    args = parser.parse_args(argv)
    if args.count < 0:
        parser.error("--count must not be negative")
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls_cert and --tls_key go together")

    def handler(message: Message) -> bool:
        sys.stdout.write(message.to_json() + "\n")
        sys.stdout.flush()
        return True

    servers = [s for s in args.server.split(",") if s]
    several = len(servers) > 1

    def on_reconnect(name: str, code: grpc.StatusCode, details: str,
                     delay: float) -> None:
        where = "%s: " % name if several else ""
        print("%s: %sstream ended (%s: %s); reconnecting in %.3fs"
              % (LOG_PREFIX, where, code.name, details, delay),
              file=sys.stderr)

    try:
        tls = None
        if args.tls_ca or args.tls_cert or args.tls_server_name:
            tls = TLS.from_files(args.tls_ca, args.tls_cert, args.tls_key,
                                 args.tls_server_name)
        token = os.environ.get("MSGQ_TOKEN") or None
        subscriber = Subscriber(
            servers, args.table, handler, keyspace=args.keyspace,
            ack=args.ack, ack_timeout=args.timeout, tls=tls,
            token=None if args.token_file else token,
            token_file=args.token_file, on_reconnect=on_reconnect)
    except (OSError, ValueError) as e:
        print("%s: %s" % (LOG_PREFIX, e), file=sys.stderr)
        return EXIT_USAGE
    return _run(lambda: subscriber.run(count=args.count))


def _run(consume_fn: Callable[[], int]) -> int:
    """Runs consume_fn() and maps how it ended to the exit code."""
    try:
        consume_fn()
    except grpc.RpcError as e:
        print("%s: %s: %s" % (LOG_PREFIX, e.code().name, e.details()),
              file=sys.stderr)
        return _exit_code(e.code())
    except ProtocolError as e:
        print("%s: protocol error: %s" % (LOG_PREFIX, e), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK


def console_main() -> None:
    """The msgq-consume console script."""
    sys.exit(main())
