"""The client conformance suite (client/SPEC.md, client/conformance/README.md):
runs every scenario of scenarios.json against one client's driver, with a
private MariaDB and a real msgqd, and compares each result with the
scenario's expected values exactly.

    run.py --client cpp|go|node|python|python-aio [--driver CMD ...]
           [--scenario NAME]

A scenario listed under `xfail` for the client must fail (reported XFAIL);
when it passes the run fails (XPASS), so that a fixed client drops its
entry. Exit status 0 when every scenario passed or failed as expected.

Environment: MSGQD (default build/server/msgqd), MSGQ_SOURCE_DIR, and per
client the driver: MSGQ_CONFORMANCE_CPP_DRIVER (the built C++ driver),
MSGQ_CONFORMANCE_GO_OUT (where drivers/build_go.sh builds the Go one)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(CLIENT, "python"))

import msgq  # noqa: E402
import msgq_inbox_testing as testing  # noqa: E402

# Seconds a driver may take beyond its scenario's own timeout.
DRIVER_GRACE = 60
# The driver's own bound on waiting for its stop condition.
SCENARIO_TIMEOUT = 30


def table_ddl(name: str, table: Dict[str, Any]) -> str:
    comment = ("vitess_message,vt_ack_wait=%s,vt_purge_after=86400,"
               "vt_batch_size=10,vt_cache_size=10000,vt_poller_interval=1"
               % table["ack_wait"])
    for key in ("min_backoff", "max_backoff"):
        if key in table:
            comment += ",vt_%s=%s" % (key, table[key])
    producer = table.get("producer", False)
    return ("CREATE TABLE msgq.`%s` (id %s NOT NULL, "
            "priority tinyint NOT NULL DEFAULT 50, "
            "epoch bigint NOT NULL DEFAULT 0, time_next bigint DEFAULT 0, "
            "time_acked bigint DEFAULT NULL, message json, "
            "last_error varchar(255) DEFAULT NULL, "
            "time_dead bigint DEFAULT NULL, %s"
            "PRIMARY KEY (id), INDEX poller_idx (time_acked, priority, "
            "time_next)) COMMENT '%s'"
            % (name, "varchar(36)" if producer else "bigint",
               "message_key varchar(255) DEFAULT NULL, "
               "message_type varchar(255) DEFAULT NULL, headers json, "
               "traceparent varchar(55) DEFAULT NULL, "
               "tracestate varchar(512) DEFAULT NULL, " if producer else "",
               comment))


def driver_command(client: str, given: List[str]) -> List[str]:
    if given:
        return given
    if client in ("python", "python-aio"):
        return [sys.executable, os.path.join(HERE, "drivers", "python_driver.py"),
                "--api", "aio" if client == "python-aio" else "sync"]
    if client == "node":
        subprocess.run(["bash", os.path.join(CLIENT, "node", "scripts",
                                             "ctest.sh"), "install"],
                       check=True)
        return ["node", os.path.join(HERE, "drivers", "node_driver.js")]
    if client == "cpp":
        return [os.environ["MSGQ_CONFORMANCE_CPP_DRIVER"]]
    if client == "go":
        out = os.environ.get("MSGQ_CONFORMANCE_GO_OUT") or os.path.join(
            testing.REPO, "build", "client", "go")
        subprocess.run(["bash", os.path.join(HERE, "drivers", "build_go.sh"),
                        out], check=True)
        return [os.path.join(out, "msgq-conformance-go")]
    raise SystemExit("unknown client %r" % client)


def rows(db: testing.MariaDB, table: str) -> Dict[str, Dict[str, Any]]:
    """Each row's end state: acked, dead or pending; its epoch; due (a
    pending row's time_next is now or earlier); last_error."""
    out = {}
    for (id_, acked, dead, epoch, due, last_error) in db.sql(
            "SELECT id, time_acked IS NOT NULL, "
            "time_acked IS NULL AND time_next IS NULL, epoch, "
            "time_next <= UNIX_TIMESTAMP(NOW(6)) * 1000000000, last_error "
            "FROM msgq.`%s`" % table):
        id_ = id_.decode() if isinstance(id_, bytes) else str(id_)
        out[id_] = {"state": "acked" if acked else "dead" if dead else "pending",
                    "epoch": int(epoch), "due": bool(due),
                    "last_error": last_error}
    return out


def substitute(value: Any, names: Dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        return names[value[1:]]
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {substitute(k, names): substitute(v, names)
                for k, v in value.items()}
    return value


def compare(expect: Dict[str, Any], result: Dict[str, Any],
            table_rows: Dict[str, Dict[str, Any]],
            ordered: bool) -> List[str]:
    """The differences between the expected values and what happened.
    `ordered`: the deliveries' order counts (one handler at a time)."""
    expect = substitute(expect, result.get("enqueued", {}))
    problems = []
    if result.get("timed_out"):
        problems.append("the driver timed out waiting for its stop condition")
    got = [[d["id"], d["epoch"]] for d in result.get("deliveries", [])]
    want = expect["deliveries"]
    if not ordered:
        got, want = sorted(got), sorted(want)
    if got != want:
        problems.append("deliveries %s, want %s" % (got, want))
    for first, second, at_least in expect.get("gaps", []):
        ds = result.get("deliveries", [])
        if len(ds) > max(first, second):
            gap = ds[second]["t"] - ds[first]["t"]
            if gap < at_least:
                problems.append("delivery %d came %.3fs after delivery %d, "
                                "want at least %.3fs"
                                % (second, gap, first, at_least))
    if result.get("error") != expect.get("error"):
        problems.append("error %r, want %r"
                        % (result.get("error"), expect.get("error")))
    if "finished_before_close" in expect and (
            result.get("finished_before_close")
            != expect["finished_before_close"]):
        problems.append("%s handlers finished when close returned, want %s"
                        % (result.get("finished_before_close"),
                           expect["finished_before_close"]))
    want_rows = expect["rows"]
    if sorted(table_rows) != sorted(want_rows):
        problems.append("table ids %s, want %s"
                        % (sorted(table_rows), sorted(want_rows)))
    for id_, want in sorted(want_rows.items()):
        have = table_rows.get(id_)
        if have is None:
            continue
        for key, value in sorted(want.items()):
            if have[key] != value:
                problems.append("row %s: %s %r, want %r"
                                % (id_, key, have[key], value))
    return problems


def wait_loaded(address: str, name: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    with msgq.Client(address) as client:
        while time.monotonic() < deadline:
            if any(t.table.name == name and t.loaded
                   for t in client.list_tables()):
                return
            time.sleep(0.05)
    raise RuntimeError("msgqd did not load table %s" % name)


def restart_server(restart: Dict[str, Any], db: testing.MariaDB,
                   msgqd: testing.Msgqd, table: str) -> None:
    """Once `after_acked` rows of `table` are acked, kills msgqd, starts it
    again on the same address and inserts `then_ids`."""
    deadline = time.monotonic() + SCENARIO_TIMEOUT
    while db.sql("SELECT COUNT(*) FROM msgq.`%s` WHERE time_acked IS NOT "
                 "NULL" % table)[0][0] < restart["after_acked"]:
        if time.monotonic() > deadline:
            return  # the driver times out and says so
        time.sleep(0.05)
    msgqd.kill()
    msgqd.start()
    ids = restart["then_ids"]
    db.sql("INSERT INTO msgq.`%s` (id, message) VALUES %s"
           % (table, ", ".join(["(%s, %s)"] * len(ids))),
           [v for id_ in ids for v in (id_, '{"n": %d}' % id_)])


def run_scenario(scenario: Dict[str, Any], client: str, command: List[str],
                 db: testing.MariaDB,
                 msgqd: testing.Msgqd) -> Tuple[List[str], str]:
    address = msgqd.address
    table = "%s_%s" % (scenario["name"], client.replace("-", "_"))
    created = scenario["table"].get("create", True)
    if created:
        db.sql(table_ddl(table, scenario["table"]))
        for id_ in scenario["table"].get("ids", []):
            db.sql("INSERT INTO msgq.`%s` (id, message) VALUES (%%s, %%s)"
                   % table, (id_, '{"n": %d}' % id_))
        wait_loaded(address, table)
    spec = dict(scenario["driver"], timeout=SCENARIO_TIMEOUT,
                mysql_socket=db.socket, database="msgq")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(CLIENT, "python"), env.get("PYTHONPATH"))
        if p)
    proc = subprocess.Popen(command + [address, table, json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        restart = scenario.get("restart")
        if restart:
            restart_server(restart, db, msgqd, table)
        stdout, stderr = proc.communicate(
            timeout=SCENARIO_TIMEOUT + DRIVER_GRACE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        return (["driver exited %d without a result" % proc.returncode],
                stdout + stderr)
    result = json.loads(lines[-1])
    ordered = (scenario["driver"]["concurrency"] == 1
               and scenario["expect"].get("ordered", True))
    table_rows = rows(db, table) if created else {}
    return (compare(scenario["expect"], result, table_rows, ordered),
            lines[-1] + "\n" + stderr[-2000:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True)
    parser.add_argument("--scenario", default="")
    parser.add_argument("--driver", nargs=argparse.REMAINDER, default=[])
    args = parser.parse_args()
    with open(os.path.join(HERE, "scenarios.json")) as f:
        scenarios = json.load(f)["scenarios"]
    command = driver_command(args.client, args.driver)
    db = testing.MariaDB()
    failures = 0
    try:
        db.sql("CREATE DATABASE msgq")
        msgqd = testing.Msgqd(db.socket, testing.free_port())
        msgqd.start()
        try:
            for scenario in scenarios:
                if args.scenario and scenario["name"] != args.scenario:
                    continue
                xfail = scenario.get("xfail", {}).get(args.client)
                problems, output = run_scenario(scenario, args.client,
                                                command, db, msgqd)
                if problems and xfail:
                    verdict = "XFAIL"
                elif problems:
                    verdict, failures = "FAIL", failures + 1
                elif xfail:
                    verdict, failures = "XPASS", failures + 1
                    problems = ["passes, but scenarios.json lists it as an "
                                "expected failure: %s" % xfail]
                else:
                    verdict = "PASS"
                print("%-5s %s %s" % (verdict, args.client, scenario["name"]),
                      flush=True)
                for p in problems:
                    print("      " + p)
                if verdict != "PASS":
                    print("      driver output: " + output.replace("\n", "\n      "))
        finally:
            msgqd.stop()
    finally:
        db.stop()
    print("%s: %d unexpected result(s)" % (args.client, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
