#!/usr/bin/env bash
# client/go/vendor-debian.sh: makes client/go/vendor from the Go sources
# Debian installs in /usr/share/gocode/src, so that the module builds with
# no network and no module proxy (go build, vet and test use vendor/
# because go.mod says go >= 1.14).
#
#   client/go/vendor-debian.sh
#
# vendor/ holds one symlink per module of go.mod (to Debian's copy) and
# vendor/modules.txt, the packages the module and its tests import, each
# under the module of go.mod that provides it (found with `go list` in
# GOPATH mode over /usr/share/gocode). The versions are go.mod's, which
# name the upstream releases Debian packages. vendor/ is not committed;
# run this again after changing imports or go.mod.
#
# Needs the Debian packages golang-go golang-google-grpc-dev
# golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev
# golang-opentelemetry-otel-dev golang-github-go-sql-driver-mysql-dev
# (tools/setup installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gocode=/usr/share/gocode/src

missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
[ -d $gocode/google.golang.org/grpc ] || missing+=(golang-google-grpc-dev)
[ -d $gocode/google.golang.org/protobuf ] || missing+=(golang-google-protobuf-dev)
[ -d $gocode/go.opentelemetry.io/otel/sdk/trace/tracetest ] ||
  missing+=(golang-opentelemetry-otel-dev)
[ -d $gocode/github.com/go-sql-driver/mysql ] ||
  missing+=(golang-github-go-sql-driver-mysql-dev)
# gRPC's codec marshals through github.com/golang/protobuf: its v1.3 (Debian's
# golang-github-golang-protobuf-1-3-dev, what apt picks by default for
# golang-google-grpc-dev) cannot handle the messages protoc-gen-go 1.28 makes
# and panics at the first call; v1.5 (-1-5-dev, which replaces it) wraps them.
grep -qs '"google.golang.org/protobuf' $gocode/github.com/golang/protobuf/proto/proto.go ||
  missing+=(golang-github-golang-protobuf-1-5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "vendor-debian.sh: missing ${missing[*]}; install these Debian packages (tools/setup)" >&2
  exit 1
fi

# The module's requirements: "path version" per line.
requires=$(awk '
  /^require \($/ { block = 1; next }
  block && /^\)$/ { block = 0; next }
  block && NF >= 2 { print $1, $2; next }
  /^require [^(]/ { print $2, $3 }' "$here/go.mod" | sort)

# Every package outside the standard library that the module and its tests
# import, resolved in GOPATH mode against Debian's sources.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
module=$(awk '/^module / { print $2; exit }' "$here/go.mod")
rm -rf "$here/vendor"
mkdir -p "$work/src/$(dirname "$module")"
ln -s "$here" "$work/src/$module"
packages=$(cd "$work/src/$module" &&
  GO111MODULE=off GOFLAGS= GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" \
  go list -deps -test -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... |
  awk -v m="$module" '{ p = $1 } p != m && p != m ".test" && p != m "_test" && index(p, m "/") != 1 { print p }' |
  sort -u)

# Each package goes to the longest module path of go.mod that prefixes it.
assigned=$(awk -v requires="$requires" '
  BEGIN { n = split(requires, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, " "); mods[f[1]] = 1 } }
  {
    best = ""
    for (m in mods) if (($0 == m || index($0, m "/") == 1) && length(m) > length(best)) best = m
    if (best == "") { print "vendor-debian.sh: no module in go.mod provides " $0 > "/dev/stderr"; bad = 1 }
    print best, $0
  }
  END { exit bad }' <<<"$packages")

mkdir -p "$here/vendor"
{
  while read -r path version; do
    echo "# $path $version"
    goversion=$(awk '/^go / { print $2; exit }' "$gocode/$path/go.mod" 2>/dev/null || true)
    if [ -n "$goversion" ]; then echo "## explicit; go $goversion"; else echo "## explicit"; fi
    awk -v m="$path" '$1 == m { print $2 }' <<<"$assigned"
  done <<<"$requires"
} >"$here/vendor/modules.txt"

# One symlink per module root; a module inside another's directory (as
# go.opentelemetry.io/otel/trace in go.opentelemetry.io/otel) comes with it.
linked=()
while read -r path _; do
  for l in "${linked[@]:-}"; do
    [ -n "$l" ] && case "$path" in "$l"/*) continue 2 ;; esac
  done
  [ -d "$gocode/$path" ] || { echo "vendor-debian.sh: $gocode/$path is missing" >&2; exit 1; }
  mkdir -p "$here/vendor/$(dirname "$path")"
  ln -s "$gocode/$path" "$here/vendor/$path"
  linked+=("$path")
done <<<"$requires"
