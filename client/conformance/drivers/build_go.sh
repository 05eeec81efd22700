#!/usr/bin/env bash
# Builds the Go client's conformance driver (client/go/internal/conformance)
# offline, as client/go/run_tests.sh builds the client, into
# OUT_DIR/msgq-conformance-go (Go build cache: OUT_DIR/gocache, shared with
# run_tests.sh).
#
#   client/conformance/drivers/build_go.sh OUT_DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
go_dir=$(cd "$(dirname "$0")/../../go" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
"$go_dir/vendor-debian.sh"
export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on
export GOCACHE="$out/gocache" CGO_ENABLED=0
cd "$go_dir"
exec go build -o "$out/msgq-conformance-go" ./internal/conformance
