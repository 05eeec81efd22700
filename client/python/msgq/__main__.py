"""`python3 -m msgq`: the msgq-consume command, from a checkout or an install."""

from msgq.cli import console_main

console_main()
