#!/usr/bin/env bash
# README.md#quickstart through the real tools/run: private MariaDB
# under a
# temporary MSGQ_VAR_DIR, msgqd on a free port, an INSERT with the mariadb
# client, `msgq tail demo --ack --count 1`, then SIGINT stops msgqd and the
# private MariaDB.
#   tests/tools_run_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d /tmp/msgq-run-test-XXXXXX)
log=$tmp/run.log
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  "$src/tools/mariadb-private" stop "$tmp/var/mariadb" --kill >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- tools/run output:" >&2; cat "$log" >&2; exit 1; }

# setsid: tools/run and msgqd in their own process group, like a terminal job.
# Free ports, not the defaults: another msgqd may hold those (msgqd would
# refuse to start).
MSGQ_VAR_DIR=$tmp/var setsid "$src/tools/run" --listen=127.0.0.1:0 \
  --http_listen=127.0.0.1:0 --mysql_protocol_listen=127.0.0.1:0 >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "msgqd listening on" "$log" && break
  kill -0 "$pid" 2>/dev/null || fail "tools/run exited early"
  sleep 0.1
done
addr=$(sed -n 's/^msgqd listening on //p' "$log" | head -1)
[ -n "$addr" ] || fail "msgqd did not start"
grep -q "Private MariaDB running" "$log" || fail "no private MariaDB notice"

sock=$tmp/var/mariadb/mysqld.sock
timeout 30 "$build/client/msgq" --server="$addr" tail demo --ack --count 1 >"$tmp/tail.out" 2>"$tmp/tail.err" &
tail_pid=$!
sleep 1
mariadb --no-defaults -S "$sock" -uroot msgq \
  -e "INSERT INTO demo (id, message) VALUES (1, '{\"hello\": \"world\"}')"
wait "$tail_pid" || fail "msgq tail failed: $(cat "$tmp/tail.err")"
# The demo table streams msgq's optional time_created and last_error too.
expected_prefix='id=1 message="{\"hello\": \"world\"}" time_created='
out=$(cat "$tmp/tail.out")
case "$out" in
  "$expected_prefix"*" last_error=NULL") ;;
  *) fail "tail printed: $out" ;;
esac
created=${out#"$expected_prefix"}; created=${created%" last_error=NULL"}
case "$created" in
  ''|*[!0-9]*) fail "time_created is not a number of ns: $out" ;;
esac
acked=$(mariadb --no-defaults -S "$sock" -uroot -N msgq -e "SELECT COUNT(*) FROM demo WHERE time_acked IS NOT NULL")
[ "$acked" = 1 ] || fail "message not acked ($acked)"

# Ctrl-C: the whole process group gets SIGINT.
kill -INT -- -"$pid"
for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "tools/run did not stop on SIGINT"
pid=
"$src/tools/mariadb-private" status "$tmp/var/mariadb" && fail "private MariaDB still running"
grep -q "msgqd stopped" "$log" || fail "msgqd did not stop cleanly"
echo "ok: tools/run quickstart"
