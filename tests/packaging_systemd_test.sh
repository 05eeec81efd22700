#!/usr/bin/env bash
# packaging/msgqd.service and packaging/msgqd.flags:
#  1. every flag of the example flagfile exists (msgqd --only_check_args);
#  2. msgqd started the way the unit starts it (--flagfile, then
#     --mysql_password_file in a credentials directory) takes its settings
#     from the file: later lines override earlier ones, so the copy ends with
#     --listen=127.0.0.1:0 (a free port, not the default 15999) and a MySQL
#     socket that the log must name;
#  3. systemd-analyze verify finds nothing to say about the unit (skipped,
#     with a notice, where systemd-analyze is missing);
#  4. the hardening docs/operations.md#running-in-production promises is in
#     the unit.
#   tests/packaging_systemd_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
msgqd=$build/server/msgqd
tmp=$(mktemp -d /tmp/msgq-systemd-test-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/msgqd.log" ] && cat "$tmp/msgqd.log" >&2; exit 1; }

"$msgqd" --flagfile="$src/packaging/msgqd.flags" --only_check_args ||
  fail "the example flagfile has a flag msgqd does not know"

cp "$src/packaging/msgqd.flags" "$tmp/msgqd.flags"
printf '%s\n' --listen=127.0.0.1:0 --http_listen= --mysql_protocol_listen= \
  "--mysql_socket=$tmp/no-mysql.sock" >>"$tmp/msgqd.flags"
mkdir "$tmp/credentials"
echo 'not-in-ps' >"$tmp/credentials/mysql_password"
"$msgqd" --flagfile="$tmp/msgqd.flags" \
  --mysql_password_file="$tmp/credentials/mysql_password" \
  >"$tmp/msgqd.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  grep -q "^msgqd listening on " "$tmp/msgqd.log" && break
  kill -0 "$pid" 2>/dev/null || fail "msgqd exited"
  sleep 0.1  # polling a log: msgqd has no readiness notification
done
addr=$(sed -n 's/^msgqd listening on //p' "$tmp/msgqd.log")
case "$addr" in
  127.0.0.1:15999 | "") fail "--listen of the flagfile not used: '$addr'" ;;
  127.0.0.1:*) ;;
  *) fail "unexpected listen address $addr" ;;
esac
grep -q "cannot connect to MySQL at $tmp/no-mysql.sock" "$tmp/msgqd.log" ||
  fail "--mysql_socket of the flagfile not used"
ps -o args= -p "$pid" | grep -q not-in-ps && fail "password in ps"
kill -TERM "$pid"
wait "$pid" || fail "msgqd did not exit 0 on SIGTERM"
pid=
grep -q "msgqd stopped" "$tmp/msgqd.log" || fail "msgqd did not stop cleanly"

unit=$src/packaging/msgqd.service
for directive in DynamicUser=yes ProtectSystem=strict ProtectHome=yes \
    NoNewPrivileges=yes PrivateTmp=yes Restart=on-failure \
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' \
    'ExecStart=/usr/bin/msgqd --flagfile=/etc/msgq/msgqd.flags ' \
    LoadCredential=mysql_password:/etc/msgq/mysql_password; do
  grep -q "^$directive" "$unit" || fail "unit lacks $directive"
done
if command -v systemd-analyze >/dev/null; then
  # verify checks that ExecStart's binary exists: point it at the build's.
  sed "s|/usr/bin/msgqd|$msgqd|" "$unit" >"$tmp/msgqd.service"
  out=$(systemd-analyze verify "$tmp/msgqd.service" 2>&1) ||
    fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
else
  echo "NOTICE: systemd-analyze not installed; unit not verified"
fi
echo "PASS: unit and flagfile"
