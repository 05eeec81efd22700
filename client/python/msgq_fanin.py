"""msgq_fanin: the old module name of msgq.consume_all (fan-in from several
servers). New code: `import msgq; msgq.consume_all(...)`, or
msgq.Subscriber with several servers."""

from msgq.fanin import consume_all  # noqa: F401
