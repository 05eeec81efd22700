#!/usr/bin/env bash
# client/go/run_tests.sh: builds the Go client (package msgq) offline and runs
# its tests with `go test` against a real MariaDB and msgqd.
#
#   client/go/run_tests.sh OUT_DIR [go test flags...]
#       e.g. client/go/run_tests.sh build/client/go -run Heartbeat -v
#
# Everything goes to OUT_DIR: a GOPATH (OUT_DIR/gopath) whose src/msgq holds
# symlinks to client/go/*.go and src/msgq/v1 the code protoc generates from
# proto/msgq/v1/messaging.proto (package msgqv1, never committed), and the Go
# build cache (OUT_DIR/gocache). No network: GOPATH mode (GO111MODULE=off)
# over Debian's Go sources in /usr/share/gocode (packages golang-go,
# golang-google-grpc-dev, golang-google-protobuf-dev,
# golang-github-golang-protobuf-1-5-dev, golang-opentelemetry-otel-dev (the
# OpenTelemetry API the consumer spans use, and the SDK the tests record them
# with), golang-github-go-sql-driver-mysql-dev (the Inbox's MySQL driver),
# protoc-gen-go, protoc-gen-go-grpc, protobuf-compiler; tools/setup
# installs them).
#
# Environment: MSGQD = the msgqd binary (ctest passes the built one; default
# BUILD/server/msgqd next to OUT_DIR's build tree, else build/server/msgqd of
# the checkout). MSGQ_GO_ONLY_BUILD=1 generates and compiles (and vets)
# without running the tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [go test flags...]" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
shift

missing=()
for tool in go protoc protoc-gen-go protoc-gen-go-grpc; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ -d /usr/share/gocode/src/google.golang.org/grpc ] || missing+=(golang-google-grpc-dev)
[ -d /usr/share/gocode/src/google.golang.org/protobuf ] || missing+=(golang-google-protobuf-dev)
[ -d /usr/share/gocode/src/go.opentelemetry.io/otel/sdk/trace/tracetest ] ||
  missing+=(golang-opentelemetry-otel-dev)
[ -d /usr/share/gocode/src/github.com/go-sql-driver/mysql ] ||
  missing+=(golang-github-go-sql-driver-mysql-dev)
# gRPC's codec marshals through github.com/golang/protobuf: its v1.3 (Debian's
# golang-github-golang-protobuf-1-3-dev, what apt picks by default for
# golang-google-grpc-dev) cannot handle the messages protoc-gen-go 1.28 makes
# and panics at the first call; v1.5 (-1-5-dev, which replaces it) wraps them.
grep -qs '"google.golang.org/protobuf' /usr/share/gocode/src/github.com/golang/protobuf/proto/proto.go ||
  missing+=(golang-github-golang-protobuf-1-5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "run_tests.sh: missing ${missing[*]}; install the Debian packages" \
    "golang-go golang-google-grpc-dev golang-google-protobuf-dev" \
    "golang-github-golang-protobuf-1-5-dev golang-opentelemetry-otel-dev" \
    "golang-github-go-sql-driver-mysql-dev" \
    "protoc-gen-go protoc-gen-go-grpc protobuf-compiler (tools/setup)" >&2
  exit 1
fi

export GO111MODULE=off GOFLAGS= GOPROXY=off GOTOOLCHAIN=local
export GOPATH="$out/gopath:/usr/share/gocode"
export GOCACHE="$out/gocache"
export CGO_ENABLED=0

pkg="$out/gopath/src/msgq"
rm -rf "$pkg"
mkdir -p "$pkg/v1"
for f in "$here"/*.go; do ln -s "$f" "$pkg/$(basename "$f")"; done
map="Mmsgq/v1/messaging.proto=msgq/v1;msgqv1"
protoc -I"$src/proto" -I/usr/include \
  --go_out="$out/gopath/src" --go_opt="$map" \
  --go-grpc_out="$out/gopath/src" --go-grpc_opt="$map" \
  msgq/v1/messaging.proto

if [ -z "${MSGQD:-}" ]; then
  for candidate in "$out/../../server/msgqd" "$src/build/server/msgqd"; do
    if [ -x "$candidate" ]; then MSGQD=$(cd "$(dirname "$candidate")" && pwd)/msgqd; break; fi
  done
fi
export MSGQD=${MSGQD:-}
export MSGQ_SOURCE_DIR="$src"
export TMPDIR="${TMPDIR:-/tmp}"

cd "$pkg"
if [ "${MSGQ_GO_ONLY_BUILD:-0}" = 1 ]; then
  # Compiles (and vets) the package and its test binary into GOCACHE, runs
  # no test: ctest's msgq_go_client_build, so that the cold compile of gRPC
  # (minutes on a loaded 2-core machine) has a timeout of its own.
  exec go test -count=1 -run '^$' msgq
fi
exec go test -p 1 -count=1 "$@" msgq
