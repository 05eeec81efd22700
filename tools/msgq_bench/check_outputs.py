#!/usr/bin/env python3
"""check_outputs.py OUT_DIR [MESSAGES RATE DURATION]: the ctest
bench_smoke_outputs. Checks that a msgq-bench --mode=all run wrote all its
files and that bench.json says what the run did: ok, a relay, one drain and
a sustained phase, every message received, none lost, counts as JSON
numbers, the machine probe, the tables' sizes and the reads per message. Exits 0 if so, 1 naming the first thing wrong."""
import json
import os
import sys

out = sys.argv[1]
messages = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
sustained_messages = (int(float(sys.argv[3]) * float(sys.argv[4]))
                      if len(sys.argv) > 4 else 5000)


def check(cond, what):
    if not cond:
        sys.exit(f"check_outputs: {what}")


for name in ("bench.txt", "bench.json", "timeseries.csv", "bench.png"):
    path = os.path.join(out, name)
    check(os.path.isfile(path) and os.path.getsize(path) > 0, f"no {path}")
# bench.txt is written first: an older file is left from an earlier run.
written = os.stat(os.path.join(out, "bench.txt")).st_mtime_ns
for name in ("bench.json", "timeseries.csv", "bench.png"):
    check(os.stat(os.path.join(out, name)).st_mtime_ns >= written,
          f"{name} is older than bench.txt (from an earlier run)")
with open(os.path.join(out, "bench.png"), "rb") as f:
    check(f.read(8) == b"\x89PNG\r\n\x1a\n", "bench.png is not a PNG")
with open(os.path.join(out, "bench.json")) as f:
    r = json.load(f)
check(r["ok"] is True, "ok is not true")
check(r["options"]["messages"] == messages, "options.messages")
check(r["relay"]["processed"] == messages, "relay.processed")
check(len(r["drains"]) == 1, "not one drain")
d = r["drains"][0]
check(d["received"] == messages and d["lost"] == 0, "drain received/lost")
check(d["cost"]["mysql_delta"]["Com_commit"] > 0, "drain mysql_delta")
check(d["table_mib"] > 0 and r["relay"]["table_mib"] > 0, "table_mib")
for cost in (d["cost"], r["relay"]["cost"]):
    check(cost["per_message"]["handler_reads"] > 0, "handler_reads")
    check("Innodb_buffer_pool_reads" in cost["mysql_delta"],
          "Innodb_buffer_pool_reads")
m = r["machine"]
check(m["fsync_samples"] == 200 and m["fsync_p99_ms"] >= m["fsync_p50_ms"] > 0,
      "machine fsync probe")
check(m["commits"] > 0 and m["commits_per_s"] > 0, "machine commit probe")
check(m["buffer_pool_mib"] == 512, "machine buffer_pool_mib")
s = r["sustained"]
check(s["received"] == sustained_messages and s["lost"] == 0,
      "sustained received/lost")
check(s["latency_commit_end"]["count"] == sustained_messages,
      "sustained latency count")
print("check_outputs: ok")
