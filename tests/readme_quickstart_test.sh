#!/usr/bin/env bash
# README.md#quickstart, command by command, in the order of the page,
# as a newcomer types them: the sh blocks of that section are read from the
# page itself, so the page and this test cannot drift apart.
#
# The commands use the default ports (15999, 15998, 15306) and paths
# relative to a checkout (var/, build/), so they run verbatim in a network
# namespace of their own (root only; skipped otherwise: exit 77) and in a
# scratch directory that looks like a checkout: tools/, schema/ and client/
# link to the sources, build/ to BUILD_DIR, var/ is new. The Python stubs
# are removed first, as on a fresh clone: tools/run must build them.
#   tests/readme_quickstart_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)

if [ -z "${MSGQ_QUICKSTART_NETNS:-}" ]; then
  if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
    echo "SKIP: needs root for a network namespace (unshare -n)"
    exit 77
  fi
  exec env MSGQ_QUICKSTART_NETNS=1 unshare -n -- "$0" "$@"
fi
ip link set lo up

tmp=$(mktemp -d /tmp/msgq-quickstart-XXXXXX)
run_pid=
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$run_pid" ] && kill -TERM -- -"$run_pid" 2>/dev/null || true
  "$src/tools/mariadb-private" stop "$tmp/checkout/var/mariadb" --kill >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- tools/run output:" >&2
  cat "$tmp/run.log" >&2 2>/dev/null || true
  exit 1
}

# Its section README.md#quickstart: the sh blocks, each a list of commands
# (continuation lines joined, comments and blank lines dropped), one per
# line of $tmp/block.N.
awk -v dir="$tmp" '
  /^## / { in_section = ($0 ~ /^## Quickstart/) }
  in_section && /^```sh$/ { in_block = 1; n++; cmd = ""; next }
  in_block && /^```$/ { in_block = 0; next }
  in_block {
    line = $0
    if (cmd == "" && line ~ /^#/) next
    if (line ~ /\\$/) { sub(/\\$/, "", line); cmd = cmd line; next }
    cmd = cmd line
    sub(/  +# .*$/, "", cmd)
    if (cmd != "") print cmd > (dir "/block." n)
    cmd = ""
  }
' "$src/README.md"
block() { sed -n "${2}p" "$tmp/block.$1"; }
[ "$(ls "$tmp"/block.* | wc -l)" = 5 ] || fail "README.md#quickstart: not 5 sh blocks"

# A checkout without var/, whose build lacks the Python stubs.
work=$tmp/checkout
mkdir -p "$work"
for d in tools schema client; do ln -s "$src/$d" "$work/$d"; done
ln -s "$build" "$work/build"
rm -f "$build"/client/python/msgq/v1/messaging_pb2*.py
cd "$work"

# wait_for FILE TEXT SECONDS: until FILE holds TEXT.
wait_for() {
  for _ in $(seq 1 $(($3 * 10))); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# Terminal 1: tools/run (its own process group, like a terminal job).
[ "$(block 1 1)" = "tools/run" ] || fail "block 1 is not tools/run: $(block 1 1)"
MSGQ_VAR_DIR= setsid bash -c "$(block 1 1)" >"$tmp/run.log" 2>&1 &
run_pid=$!
wait_for "$tmp/run.log" "msgqd listening on 127.0.0.1:15999" 600 ||
  fail "msgqd did not start on 127.0.0.1:15999"
wait_for "$tmp/run.log" "msgqd http on 127.0.0.1:15998" 1 || fail "no HTTP port"

# Terminal 2: waits for one message.
[ "$(wc -l <"$tmp/block.2")" = 1 ] || fail "block 2 is not one command"
timeout 60 bash -c "$(block 2 1)" >"$tmp/t2.out" 2>"$tmp/t2.err" &
t2=$!
bg_pids+=("$t2")
# Terminal 3: the INSERT of message 1.
bash -c "$(block 3 1)" || fail "INSERT 1 failed"
wait "$t2" || fail "terminal 2 failed: $(cat "$tmp/t2.err")"
sql() { mariadb --no-defaults -S var/mariadb/mysqld.sock -uroot -N msgq -e "$1"; }
created=$(sql "SELECT time_created FROM demo WHERE id = 1")
[ "$(cat "$tmp/t2.out")" = "id=1 message=\"{\\\"hello\\\": \\\"world\\\"}\" time_created=$created last_error=NULL" ] ||
  fail "terminal 2 printed: $(cat "$tmp/t2.out")"
[ -s "$tmp/t2.err" ] && fail "terminal 2 wrote to stderr: $(cat "$tmp/t2.err")"
[ "$(sql "SELECT time_acked IS NOT NULL FROM demo WHERE id = 1")" = 1 ] ||
  fail "message 1 not acked"

# Then: msgq tables, message 2 without ack then acked by id, message 3
# from Python.
[ "$(wc -l <"$tmp/block.4")" = 6 ] || fail "block 4 is not 6 commands"
run4() { timeout 60 bash -c "$(block 4 "$1")" >"$tmp/b4.$1.out" 2>"$tmp/b4.$1.err" ||
  fail "command failed: $(block 4 "$1"): $(cat "$tmp/b4.$1.err")"; }
for i in 1 2 3 4 5 6; do
  run4 "$i"
  [ -s "$tmp/b4.$i.err" ] && fail "$(block 4 "$i") wrote to stderr: $(cat "$tmp/b4.$i.err")"
done
head -1 "$tmp/b4.1.out" | grep -q '^KEYSPACE  NAME  STATUS  DISCOVERY  SUBSCRIBERS' ||
  fail "msgq tables printed: $(cat "$tmp/b4.1.out")"
sed -n 2p "$tmp/b4.1.out" | grep -Eq '^msgq +demo +loaded +binlog +0 ' ||
  fail "msgq tables printed: $(cat "$tmp/b4.1.out")"
[ "$(wc -l <"$tmp/b4.1.out")" = 2 ] || fail "msgq tables printed: $(cat "$tmp/b4.1.out")"
created=$(sql "SELECT time_created FROM demo WHERE id = 2")
[ "$(cat "$tmp/b4.3.out")" = "id=2 message=\"{\\\"n\\\": 2}\" time_created=$created last_error=NULL" ] ||
  fail "tail --count 1 printed: $(cat "$tmp/b4.3.out")"
[ "$(cat "$tmp/b4.4.out")" = "acked 1 of 1" ] || fail "ack printed: $(cat "$tmp/b4.4.out")"
created=$(sql "SELECT time_created FROM demo WHERE id = 3")
[ "$(cat "$tmp/b4.6.out")" = "{\"id\":3,\"message\":\"{\\\"from\\\": \\\"python\\\"}\",\"time_created\":$created,\"last_error\":null}" ] ||
  fail "Python printed: $(cat "$tmp/b4.6.out")"
[ "$(sql "SELECT GROUP_CONCAT(id ORDER BY id) FROM demo WHERE time_acked IS NOT NULL")" = "1,2,3" ] ||
  fail "not messages 1, 2 and 3 acked"

# The MySQL-protocol stream: a row inserted as above (id 4) appears; Ctrl-C
# (SIGINT) ends it with ERROR 1317.
[ "$(wc -l <"$tmp/block.5")" = 1 ] || fail "block 5 is not one command"
stdbuf -oL bash -c "exec $(block 5 1)" >"$tmp/s.out" 2>"$tmp/s.err" &
stream=$!
bg_pids+=("$stream")
wait_for "$tmp/s.out" "id	message	time_created	last_error" 30 || fail "stream printed: $(cat "$tmp/s.out" "$tmp/s.err")"
bash -c "$(block 3 1 | sed 's/VALUES (1, /VALUES (4, /')" || fail "INSERT 4 failed"
wait_for "$tmp/s.out" '4	{"hello": "world"}	' 30 || fail "stream printed: $(cat "$tmp/s.out" "$tmp/s.err")"
kill -INT "$stream"
wait "$stream" && fail "the stream ended with exit 0"
grep -qF "ERROR 1317 (70100)" "$tmp/s.err" || fail "stream's stderr: $(cat "$tmp/s.err")"
created=$(sql "SELECT time_created FROM demo WHERE id = 4")
[ "$(cat "$tmp/s.out")" = "$(printf 'id\tmessage\ttime_created\tlast_error\n4\t{"hello": "world"}\t%s\tNULL\n\nCtrl-C -- query killed.' "$created")" ] ||
  fail "stream printed: $(od -c "$tmp/s.out" | tail -5)"
build/client/msgq ack demo 4 >"$tmp/ack4.out" || fail "msgq ack demo 4 failed"
[ "$(cat "$tmp/ack4.out")" = "acked 1 of 1" ] || fail "ack 4 printed: $(cat "$tmp/ack4.out")"

# Ctrl-C in terminal 1 stops msgqd and the private MariaDB.
kill -INT -- -"$run_pid"
for _ in $(seq 1 300); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$run_pid" 2>/dev/null && fail "tools/run did not stop on SIGINT"
run_pid=
grep -q "msgqd stopped" "$tmp/run.log" || fail "msgqd did not stop cleanly"
"$src/tools/mariadb-private" status var/mariadb && fail "private MariaDB still running"
echo "ok: README.md#quickstart, in order"
