#!/usr/bin/env python3
"""Summarises a MariaDB slow log written during msgq-bench, by statement kind.

Where MySQL's time goes, per statement kind of msgqd and of the relay:
count, total and mean time, rows sent and examined. With --timeline, the
same per second (shows how a drain's mix changes as the backlog shrinks).

  build/tools/msgq-bench --mode=drain --messages=300000 --keep_work_dir \
    --mariadb_args="--slow-query-log=1 --long-query-time=0 \
      --slow-query-log-file=/tmp/slow.log --log-slow-verbosity=query_plan,explain"
  tools/msgq_bench/slowlog_summary.py /tmp/slow.log [--timeline]
"""
import collections
import re
import sys

ENTRY_SPLIT = re.compile(r"\n(?=# (?:Time|User@Host):)")
STATS = re.compile(r"# Query_time: ([\d.]+)\s+Lock_time: ([\d.]+)\s+"
                   r"Rows_sent: (\d+)\s+Rows_examined: (\d+)")
STAMP = re.compile(r"SET timestamp=(\d+)")


def kind(sql):
    s = sql.strip()
    if s.startswith("SELECT `priority`, `time_next`"):
        return "msgq poll SELECT" if "`time_next` <=" in s else "msgq fetch by id"
    if s.startswith(("SELECT `priority`, MIN(", "SELECT MIN(`priority`)",
                     "SELECT (SELECT MIN(`time_next`)")):
        return "msgq next-due SELECT"
    if s.startswith("UPDATE") and "`time_acked` =" in s:
        return "msgq ack UPDATE"
    if s.startswith("UPDATE") and "`epoch`" in s:
        return "msgq postpone UPDATE"
    if s.startswith("DELETE") and "`time_acked` <" in s:
        return "msgq purge DELETE"
    if s.startswith("SELECT id, payload"):
        return "relay SELECT ... FOR UPDATE SKIP LOCKED"
    if s.startswith("UPDATE") and "processed_at" in s:
        return "relay UPDATE"
    if s.startswith("INSERT"):
        return "INSERT (preload, producers)"
    if s.startswith(("COMMIT", "BEGIN", "ROLLBACK")):
        return s.split()[0].rstrip(";")
    if "information_schema" in s:
        return "msgqd schema reload"
    return "other"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    timeline = "--timeline" in sys.argv[2:]
    text = open(sys.argv[1], errors="replace").read()
    totals = collections.defaultdict(lambda: [0, 0.0, 0, 0, 0.0])
    per_second = collections.defaultdict(
        lambda: collections.defaultdict(lambda: [0, 0.0, 0]))
    first = None
    for entry in ENTRY_SPLIT.split(text):
        m = STATS.search(entry)
        if not m:
            continue
        sql = " ".join(l for l in entry.split("\n")
                       if l and not l.startswith(("#", "SET timestamp", "use ")))
        k = kind(sql)
        q, sent, examined = float(m.group(1)), int(m.group(3)), int(m.group(4))
        t = totals[k]
        t[0] += 1
        t[1] += q
        t[2] += sent
        t[3] += examined
        t[4] = max(t[4], q)
        stamp = STAMP.search(entry)
        if stamp:
            sec = int(stamp.group(1))
            first = sec if first is None else min(first, sec)
            p = per_second[sec][k]
            p[0] += 1
            p[1] += q
            p[2] += examined
    print(f"{'statement kind':42s} {'count':>7s} {'total s':>8s} {'mean ms':>8s} "
          f"{'max ms':>8s} {'rows sent':>10s} {'examined':>11s}")
    for k, (n, total, sent, examined, mx) in sorted(
            totals.items(), key=lambda kv: -kv[1][1]):
        print(f"{k:42s} {n:7d} {total:8.2f} {1000 * total / n:8.2f} "
              f"{1000 * mx:8.1f} {sent:10d} {examined:11d}")
    if timeline:
        print("\nper second: kind=count/seconds/rows examined")
        for sec in sorted(per_second):
            parts = [f"{k.split()[1] if k.startswith('msgq') else k}="
                     f"{v[0]}/{v[1]:.2f}/{v[2]}"
                     for k, v in sorted(per_second[sec].items())
                     if k.startswith(("msgq", "relay", "COMMIT"))]
            print(f"  {sec - first:4d}s  " + "  ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
