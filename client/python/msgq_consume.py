#!/usr/bin/python3
"""msgq_consume.py: the msgq-consume command (msgq.cli) run from a checkout,
and the old module name of the library (everything of the msgq package).

Same flags, output and exit codes as the installed `msgq-consume`:

  PYTHONPATH=build/client/python /usr/bin/python3 client/python/msgq_consume.py \\
      --server 127.0.0.1:15999 [--keyspace K] [--count N] [--no-ack] TABLE

New code should `import msgq` (pip install ./client/python); this module is
kept so scripts and tests that import msgq_consume keep working.
"""

import sys
from typing import List, Optional

from msgq import *  # noqa: F401,F403  (the old module's names)
from msgq import Ack, Dead, Retry  # noqa: F401
from msgq.cli import (EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK,  # noqa: F401
                      EXIT_UNAVAILABLE, EXIT_USAGE)
from msgq.cli import main as _cli_main
from msgq.message import NUMERIC_TYPES  # noqa: F401


def main(argv: Optional[List[str]] = None) -> int:
    """The command line `argv` (default: sys.argv[1:]); returns the exit code."""
    return _cli_main(argv, prog="msgq_consume.py")


if __name__ == "__main__":
    sys.exit(main())
