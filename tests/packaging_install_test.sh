#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then a tiny downstream project
# (tests/packaging_consumer) finds it with find_package(msgq), links a
# program to each installed library and runs it: msgq::client's ListTables
# and msgq::inbox's EnsureTable against a closed port must come back
# UNAVAILABLE, msgq::producer's Enqueue on no connection INVALID_ARGUMENT.
# Also checks the installed layout.
# Needs a built tree (it installs, never builds, BUILD_DIR). ctest sets
# MSGQ_CONSUMER_CXX (the tree's compiler) and MSGQ_CONSUMER_FLAGS (its
# -fsanitize=, if any) for the consumer.
#   tests/packaging_install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d /tmp/msgq-install-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" --strip >"$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
# --strip, as docs/install.md says: no debug sections left in the programs.
for p in msgqd msgq; do
  if readelf -S "$tmp/prefix/bin/$p" | grep -q '\.debug_info'; then
    fail "bin/$p keeps its debug symbols after --strip"
  fi
done
for f in bin/msgqd bin/msgq lib/libmsgq_client.a lib/libmsgq_inbox.a \
    lib/libmsgq_producer.a lib/libmsgq_proto.a lib/libmsgq_common.a \
    lib/libmsgq_common_grpc.a lib/libmsgq_utf8.a \
    include/msgq/client.h include/msgq/subscriber.h \
    include/msgq/subscriber_options.h include/msgq/message.h \
    include/msgq/handler_result.h include/msgq/table_ref.h \
    include/msgq/credentials.h include/msgq/backoff.h include/msgq/inbox.h \
    include/msgq/producer.h \
    lib/cmake/msgq/msgqConfig.cmake lib/cmake/msgq/msgqConfigVersion.cmake \
    lib/cmake/msgq/msgqTargets.cmake lib/systemd/system/msgqd.service \
    etc/msgq/msgqd.flags; do
  [ -e "$tmp/prefix/$f" ] || fail "not installed: $f"
done
# The CLI's headers, the library's internals and the generated protobuf
# code are not part of its API, and no installed header includes a header
# of the tree's (client/, common/) or a generated one: each stands on what
# is installed.
[ ! -e "$tmp/prefix/include/msgq/cli.h" ] || fail "cli.h installed"
[ ! -e "$tmp/prefix/include/msgq/internal" ] || fail "client/internal/ installed"
[ ! -e "$tmp/prefix/include/msgq/client" ] || fail "include/msgq/client/ installed"
[ ! -e "$tmp/prefix/include/msgq/v1" ] || fail "generated msgq/v1/ installed"
if grep -rn -e '#include "client/' -e '#include "common/' -e '\.pb\.h' \
    -e 'google/protobuf' "$tmp/prefix/include/msgq"; then
  fail "an installed header includes the source tree's or generated code"
fi
# No path of the source or build tree leaks into the exported targets.
if grep -q -e "$src" -e "$build" "$tmp/prefix"/lib/cmake/msgq/*.cmake; then
  fail "exported targets name the source or build tree"
fi
"$tmp/prefix/bin/msgqd" --flagfile="$tmp/prefix/etc/msgq/msgqd.flags" \
  --only_check_args || fail "installed msgqd rejects the installed flagfile"
# msgqd's version is the package's (and the Python package's).
version=$("$tmp/prefix/bin/msgqd" --version | head -1)
case "$version" in
  "msgqd 0.1.0 (commit "*) ;;
  *) fail "msgqd --version says '$version', not 0.1.0" ;;
esac
grep -q '^version = "0.1.0"$' "$src/client/python/pyproject.toml" ||
  fail "client/python/pyproject.toml is not at 0.1.0"

cmake -S "$src/tests/packaging_consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  ${MSGQ_CONSUMER_CXX:+-DCMAKE_CXX_COMPILER=$MSGQ_CONSUMER_CXX} \
  "-DCMAKE_CXX_FLAGS=${MSGQ_CONSUMER_FLAGS:-}" \
  "-DCMAKE_EXE_LINKER_FLAGS=${MSGQ_CONSUMER_FLAGS:-}" \
  >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log" >&2; fail "find_package(msgq) failed"; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "the consumer did not build"; }
out=$("$tmp/consumer/consumer" --server=127.0.0.1:1)
[ "$out" = "ListTables: UNAVAILABLE" ] || fail "consumer printed: $out"
out=$("$tmp/consumer/producer")
[ "$out" = "Enqueue: INVALID_ARGUMENT enqueue needs a connection (MYSQL*)" ] ||
  fail "producer printed: $out"
out=$("$tmp/consumer/inbox")
[ "$out" = "EnsureTable: UNAVAILABLE" ] || fail "inbox printed: $out"
echo "PASS: installed msgq::client, msgq::producer and msgq::inbox work downstream"
