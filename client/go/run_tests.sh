#!/usr/bin/env bash
# client/go/run_tests.sh: builds the Go client (module msgq.dev/client/go)
# offline and runs its tests with `go test` against a real MariaDB and
# msgqd.
#
#   client/go/run_tests.sh OUT_DIR [go test flags...]
#       e.g. client/go/run_tests.sh build/client/go -run Heartbeat -v
#
# No network: vendor-debian.sh links client/go/vendor to Debian's Go sources
# in /usr/share/gocode (packages golang-go, golang-google-grpc-dev,
# golang-google-protobuf-dev, golang-github-golang-protobuf-1-5-dev,
# golang-opentelemetry-otel-dev, golang-github-go-sql-driver-mysql-dev; with
# protoc-gen-go, protoc-gen-go-grpc and protobuf-compiler to check the
# generated code; tools/setup installs them). The Go build cache goes to
# OUT_DIR/gocache.
#
# Before testing, it checks that the committed internal/msgqv1 is what
# `go generate` makes from proto/msgq/v1/messaging.proto, runs go vet, and
# builds and vets testdata/app, an application module that requires this
# one (vendored by vendor-debian.sh too).
#
# Environment: MSGQD = the msgqd binary (ctest passes the built one; default
# BUILD/server/msgqd next to OUT_DIR's build tree, else build/server/msgqd of
# the checkout). MSGQ_GO_ONLY_BUILD=1 checks, vets and compiles without
# running the tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [go test flags...]" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
shift

missing=()
for tool in protoc protoc-gen-go protoc-gen-go-grpc; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run_tests.sh: missing ${missing[*]}; install the Debian packages" \
    "protoc-gen-go protoc-gen-go-grpc protobuf-compiler (tools/setup)" >&2
  exit 1
fi
"$here/vendor-debian.sh"

export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on
export GOCACHE="$out/gocache"
export CGO_ENABLED=0

# The generated code: run the //go:generate line of generate.go in a copy
# laid out as the checkout is, and compare.
regen="$out/regenerate"
rm -rf "$regen"
mkdir -p "$regen/client/go"
ln -s "$src/proto" "$regen/proto"
cp "$here/go.mod" "$here/generate.go" "$regen/client/go/"
(cd "$regen/client/go" && GOFLAGS=-mod=mod go generate .)
if ! diff -r "$regen/client/go/internal/msgqv1" "$here/internal/msgqv1"; then
  echo "run_tests.sh: client/go/internal/msgqv1 is not what go generate makes" \
    "from proto/msgq/v1/messaging.proto: run go generate in client/go and commit" >&2
  exit 1
fi

# An application module that requires this one through a replace, as a
# user's would, vendored and built offline the same way.
app="$out/app"
rm -rf "$app"
cp -r "$here/testdata/app" "$app"
sed -i "s|^replace msgq.dev/client/go => .*|replace msgq.dev/client/go => $here|" "$app/go.mod"
"$here/vendor-debian.sh" "$app"
(cd "$app" && go build ./... && go vet ./...)

if [ -z "${MSGQD:-}" ]; then
  for candidate in "$out/../../server/msgqd" "$src/build/server/msgqd"; do
    if [ -x "$candidate" ]; then MSGQD=$(cd "$(dirname "$candidate")" && pwd)/msgqd; break; fi
  done
fi
export MSGQD=${MSGQD:-}
export MSGQ_SOURCE_DIR="$src"
# The integration tests fail, rather than skip, without msgqd or MariaDB.
export MSGQ_GO_INTEGRATION=1
export TMPDIR="${TMPDIR:-/tmp}"

cd "$here"
if [ "${MSGQ_GO_ONLY_BUILD:-0}" = 1 ]; then
  # Vets and compiles the module and its test binaries into GOCACHE, runs
  # no test: ctest's msgq_go_client_build, so that the cold compile of gRPC
  # (minutes on a loaded 2-core machine) has a timeout of its own.
  go vet ./...
  exec go test -count=1 -run '^$' ./...
fi
exec go test -p 1 -count=1 "$@" ./...
