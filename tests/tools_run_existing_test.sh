#!/usr/bin/env bash
# README.md#quickstart: "To serve an existing server instead of the
# private one, give its
# address: `tools/run --mysql_host=... --mysql_port=... --mysql_user=msgq
# --mysql_password=... --databases=app` (or `MSGQ_MYSQL_HOST`, `_PORT`,
# `_SOCKET`, `_USER`, `_PASSWORD`); no private MariaDB is started then."
#
# An "existing" server is a MariaDB started here with tools/mariadb-private
# (in a temporary directory, as a stranger to tools/run), holding database
# `app` with a message table and a user `msgq` with a password (and the
# grants on the lease tables msgqd needs by default). First a password
# without an address is refused (exit 2). Then tools/run is
# pointed at it twice: with --mysql_* flags over TCP, then with MSGQ_MYSQL_*
# variables over the socket. Each time: no private MariaDB is started (no
# notice, no var/ directory), msgqd serves `app`, a row inserted into the
# existing server is tailed and acked through it, and Ctrl-C stops msgqd but
# leaves the existing server running.
#   tests/tools_run_existing_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d /tmp/msgq-run-existing-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM -- -"$pid" 2>/dev/null || true
  "$src/tools/mariadb-private" stop "$tmp/existing" --kill >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/run.log
fail() { echo "FAIL: $*" >&2; echo "--- tools/run output:" >&2; cat "$log" >&2 2>/dev/null; exit 1; }

# A password (or user) without an address names no server: refused, before
# anything is built or started, rather than trying 127.0.0.1:3306.
for args in "--mysql_password=s3cret" "--mysql_user=msgq --mysql_password=s3cret"; do
  # shellcheck disable=SC2086  # two flags in one word
  rc=0; MSGQ_VAR_DIR="$tmp/var" "$src/tools/run" $args >"$log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "tools/run $args exited $rc, not 2"
  [ "$(cat "$log")" = "tools/run: --mysql_user/--mysql_password (or MSGQ_MYSQL_USER/PASSWORD) name no server: add --mysql_host=H [--mysql_port=P] or --mysql_socket=S (127.0.0.1:3306 is not assumed), or drop them to use the private MariaDB under var/" ] ||
    fail "tools/run $args printed: $(cat "$log")"
done
rc=0; MSGQ_VAR_DIR="$tmp/var" MSGQ_MYSQL_PASSWORD=s3cret "$src/tools/run" >"$log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "MSGQ_MYSQL_PASSWORD alone: tools/run exited $rc, not 2"
[ -e "$tmp/var" ] && fail "tools/run created $tmp/var"

eval "$("$src/tools/mariadb-private" start "$tmp/existing" --owner-pid=$$)"
sock=$MSGQ_MYSQL_SOCKET
port=$MSGQ_MYSQL_PORT
unset MSGQ_MYSQL_SOCKET MSGQ_MYSQL_PORT
sql() { mariadb --no-defaults -S "$sock" -uroot -N "$@"; }
sql -e "CREATE DATABASE app"
sed 's/\bdemo\b/jobs/' "$src/schema/message_table.sql" | sql app
sql -e "CREATE USER 'msgq'@'127.0.0.1' IDENTIFIED BY 's3cret';
        CREATE USER 'msgq'@'localhost' IDENTIFIED BY 's3cret';
        GRANT SELECT, INSERT, UPDATE, DELETE ON app.* TO 'msgq'@'127.0.0.1';
        GRANT SELECT, INSERT, UPDATE, DELETE ON app.* TO 'msgq'@'localhost';
        GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'msgq'@'127.0.0.1';
        GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'msgq'@'localhost';"
# msgqd's lease tables (--leases, the default): it creates them at start,
# or exits 2 (docs/operations.md#the-mysql-user-msgqd-needs).
for host in 127.0.0.1 localhost; do
  for table in msgq_leases msgq_instances; do
    sql -e "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON app.$table TO 'msgq'@'$host'"
  done
done

# run_once ID ENV... -- ARGS...: tools/run with ENV and ARGS; message ID
# must go through it and be acked.
run_once() {
  local id=$1; shift
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  : >"$log"
  # setsid: tools/run and msgqd in their own process group, like a terminal
  # job; MSGQ_VAR_DIR would hold a private MariaDB, were one started.
  env MSGQ_VAR_DIR="$tmp/var" "${env[@]}" setsid "$src/tools/run" \
    --listen=127.0.0.1:0 --http_listen=127.0.0.1:0 \
    --mysql_protocol_listen=127.0.0.1:0 --databases=app "$@" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do
    grep -q "msgqd listening on" "$log" && break
    kill -0 "$pid" 2>/dev/null || fail "tools/run exited early"
    sleep 0.1
  done
  local addr
  addr=$(sed -n 's/^msgqd listening on //p' "$log" | head -1)
  [ -n "$addr" ] || fail "msgqd did not start"
  grep -q "Private MariaDB running" "$log" && fail "a private MariaDB was started"
  [ -e "$tmp/var" ] && fail "tools/run created $tmp/var"

  timeout 60 "$build/client/msgq" --server="$addr" tail jobs --ack --count 1 \
    >"$tmp/tail.out" 2>"$tmp/tail.err" &
  local tail_pid=$!
  sql app -e "INSERT INTO jobs (id, message) VALUES ($id, '{\"n\": $id}')"
  wait "$tail_pid" || fail "msgq tail failed: $(cat "$tmp/tail.err")"
  # The schema's table also streams time_created (ns) and last_error.
  local prefix="id=$id message=\"{\\\"n\\\": $id}\" time_created="
  local out created
  out=$(cat "$tmp/tail.out")
  case "$out" in
    "$prefix"*" last_error=NULL") ;;
    *) fail "tail printed: $out, wanted: ${prefix}<ns> last_error=NULL" ;;
  esac
  created=${out#"$prefix"}; created=${created%" last_error=NULL"}
  case "$created" in
    ''|*[!0-9]*) fail "time_created is not a number of ns: $out" ;;
  esac
  local acked
  acked=$(sql app -e "SELECT COUNT(*) FROM jobs WHERE id = $id AND time_acked IS NOT NULL")
  [ "$acked" = 1 ] || fail "message $id not acked ($acked)"

  # Ctrl-C: the whole process group gets SIGINT; msgqd stops cleanly.
  kill -INT -- -"$pid"
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "tools/run did not stop on SIGINT"
  pid=
  grep -q "msgqd stopped" "$log" || fail "msgqd did not stop cleanly"
  "$src/tools/mariadb-private" status "$tmp/existing" ||
    fail "tools/run stopped the existing server"
}

# 1. --mysql_* flags, TCP, user msgq with a password.
run_once 1 -- --mysql_host=127.0.0.1 --mysql_port="$port" --mysql_user=msgq \
  --mysql_password=s3cret
# 2. MSGQ_MYSQL_* variables, the socket.
run_once 2 MSGQ_MYSQL_SOCKET="$sock" MSGQ_MYSQL_USER=msgq \
  MSGQ_MYSQL_PASSWORD=s3cret --
[ "$(sql app -e "SELECT COUNT(*) FROM jobs WHERE time_acked IS NOT NULL")" = 2 ] ||
  fail "not both messages acked"
echo "ok: tools/run against an existing server (flags and variables)"
