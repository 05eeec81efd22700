"""Fan-in for the msgq Python consumer: consume one table from several
msgqd servers at once (shards, or instances sharing a database).

Each server gets its own thread running msgq_consume.consume() on its own
channel, so every message is acked or nacked on the server it came from
(message.server): ids are unique only within a shard, so the same id on
another server is another message.

  servers = [(t, grpc.insecure_channel(t, options=msgq_consume.CHANNEL_OPTIONS))
             for t in ("db1:15999", "db2:15999")]
  msgq_fanin.consume_all(servers, "orders", handler)
"""

import threading

import msgq_consume


def consume_all(servers, table, handler, count=0, on_reconnect=None,
                **kwargs):
    """msgq_consume.consume() from several servers at once (fan-in): `servers` is a list
    of (name, channel). One thread per server streams and settles its own
    messages: each message's ack or nack goes to the server it came from
    (message.server), because ids are unique only within a shard (id 5 on
    another shard is another message). `handler` runs under a lock, one
    message at a time. With `count`, stops once `count` messages were handled
    in total (later ones are handed back at once), closing the other
    streams. Returns the number handled; raises the first error that ended
    a server's consume (the others are then stopped)."""
    lock = threading.Lock()
    stop = threading.Event()
    state = {"handled": 0, "error": None}

    def counted(message):
        with lock:
            if count and state["handled"] >= count:
                return msgq_consume.Retry(delay=0, reason="consumer stopped before it")
            result = handler(message)
            state["handled"] += 1
            if count and state["handled"] >= count:
                stop.set()
            return result

    def run(name, channel):
        try:
            msgq_consume.consume(channel, table, counted, server=name, stop=stop,
                    on_reconnect=(lambda c, d, t: on_reconnect(name, c, d, t))
                    if on_reconnect else None, **kwargs)
        except Exception as e:  # first error ends all
            with lock:
                if state["error"] is None:
                    state["error"] = e
            stop.set()

    threads = [threading.Thread(target=run, args=(name, channel), daemon=True)
               for name, channel in servers]
    for t in threads:
        t.start()
    stop.wait()
    # Threads mid-batch finish settling it; the others sit in their stream
    # until their channel is closed.
    for t in threads:
        t.join(timeout=2)
    for _, channel in servers:
        channel.close()
    for t in threads:
        t.join()
    if state["error"] is not None:
        raise state["error"]
    return state["handled"]
