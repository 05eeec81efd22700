#!/usr/bin/env python3
"""Prints tools/bench --shards=N's comparison and writes OUT/shards.json.

Usage: shards_summary.py OUT N   (OUT/shards-1/bench.json and
OUT/shards-N/shard-I/bench.json, as tools/msgq_bench/shards.sh writes them)

Each drain's time is from subscribing to the last ack (startup_s +
seconds); N shards started together, so theirs is the slowest shard's.
CPU is summed over the shards' mariadbd and msgqd.
"""
import json
import os
import sys


def drain(path):
    with open(path) as f:
        d = json.load(f)["drains"][0]
    c = d.get("cost", {})
    return {
        "messages": int(d.get("messages", 0)),
        "acked": bool(d.get("ok", False)),
        "lost": int(d.get("lost", 0)),
        "duplicates": int(d.get("duplicates", 0)),
        "seconds": float(d.get("startup_s", 0)) + float(d.get("seconds", 0)),
        "mysqld_s": float(c.get("mariadbd_cpu_s", 0)),
        "msgqd_s": float(c.get("msgqd_cpu_s", 0)),
        "rows_read": float(c.get("mysql_delta", {}).get("Rows_read", 0)),
    }


def total(shards):
    msgs = sum(s["messages"] for s in shards)
    secs = max(s["seconds"] for s in shards)
    return {
        "shards": len(shards),
        "messages": msgs,
        "seconds": secs,
        "msgs_per_s": msgs / secs if secs > 0 else 0,
        "mysqld_us_per_msg": 1e6 * sum(s["mysqld_s"] for s in shards) / msgs,
        "msgqd_us_per_msg": 1e6 * sum(s["msgqd_s"] for s in shards) / msgs,
        "rows_read_per_msg": sum(s["rows_read"] for s in shards) / msgs,
        "ok": all(s["acked"] and s["lost"] == 0 for s in shards),
        "per_shard": shards,
    }


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    one = total([drain(os.path.join(out, "shards-1", "bench.json"))])
    many = total([drain(os.path.join(out, f"shards-{n}", f"shard-{i}",
                                      "bench.json"))
                  for i in range(1, n + 1)])
    print(f"{'':>10} {'msgs':>9} {'seconds':>8} {'msgs/s':>8} "
          f"{'mysqld us/msg':>14} {'msgqd us/msg':>13} {'rows read/msg':>14} ok")
    for t in (one, many):
        print(f"{t['shards']:>4} shard{'s' if t['shards'] > 1 else ' '} "
              f"{t['messages']:>9} {t['seconds']:>8.2f} {t['msgs_per_s']:>8.0f} "
              f"{t['mysqld_us_per_msg']:>14.1f} {t['msgqd_us_per_msg']:>13.1f} "
              f"{t['rows_read_per_msg']:>14.2f} {'yes' if t['ok'] else 'NO'}")
    print(f"{n} shards / 1: {many['msgs_per_s'] / max(one['msgs_per_s'], 1):.2f}"
          " (same machine, same total CPU)")
    with open(os.path.join(out, "shards.json"), "w") as f:
        json.dump({"one": one, "many": many}, f, indent=1)
    return 0 if one["ok"] and many["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
