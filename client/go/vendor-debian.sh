#!/usr/bin/env bash
# client/go/vendor-debian.sh: makes the vendor directory of a Go module
# (client/go, or an application's module that requires msgq.dev/client/go)
# from the Go sources Debian installs in /usr/share/gocode/src, so that it
# builds with no network and no module proxy (go build, vet and test use
# vendor/ because go.mod says go >= 1.14).
#
#   client/go/vendor-debian.sh [MODULE_DIR]     (default: client/go)
#
# vendor/ holds one symlink per module of go.mod (to Debian's copy, or to
# the directory of a `replace PATH => DIR` line, e.g. msgq.dev/client/go =>
# /path/to/msgq/client/go) and vendor/modules.txt: the packages the module
# and its tests import, each under the module of go.mod that provides it
# (found with `go list` in GOPATH mode over the same sources). go.mod must
# require every module that provides a package (as go mod tidy would);
# the versions are its own (client/go's name the upstream releases Debian
# packages). vendor/ is not committed: run this again after changing
# imports or go.mod.
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

mod=$(cd "${1:-$here}" && pwd)
[ -f "$mod/go.mod" ] || { echo "vendor-debian.sh: no go.mod in $mod" >&2; exit 2; }

# The module's requirements, "path version" per line, and its replacements
# by a local directory, "path dir" per line (dir as go.mod writes it).
requires=$(awk '
  /^require \($/ { block = 1; next }
  block && /^\)$/ { block = 0; next }
  block && NF >= 2 { print $1, $2; next }
  /^require [^(]/ { print $2, $3 }' "$mod/go.mod" | sort)
replaces=$(awk '
  function emit(old, new) {
    if (new !~ /^(\.\.?\/|\/)/) {
      print "vendor-debian.sh: only replacements by a directory work offline: " old " => " new > "/dev/stderr"
      exit 1
    }
    print old, new
  }
  /^replace \($/ { block = 1; next }
  block && /^\)$/ { block = 0; next }
  block && $2 == "=>" { emit($1, $3); next }
  /^replace [^(]/ && $3 == "=>" { emit($2, $4) }' "$mod/go.mod")
replacement() { awk -v p="$1" '$1 == p { print $2 }' <<<"$replaces"; }
# source DIR_OF_MODULE: where the sources of a required module are.
source_of() {
  local r
  r=$(replacement "$1")
  if [ -z "$r" ]; then echo "$gocode/$1"
  elif [ "${r#/}" != "$r" ]; then echo "$r"
  else (cd "$mod" && cd "$r" && pwd)
  fi
}

# Every package outside the standard library that the module and its tests
# import, resolved in GOPATH mode against the same sources (a replaced
# module's own vendor/ resolves to them too).
# Several tests of one ctest run call this at once for the same module:
# one makes vendor/ while the others wait, then find it made from the same
# inputs (go.mod, the module's Go files, this script) and leave it alone,
# so that no build reads a vendor/ being rewritten.
exec 9<"$mod"
flock 9
inputs=$( (cat "$0" "$mod/go.mod"
  find "$mod" -name vendor -prune -o -name '*.go' -print | LC_ALL=C sort |
    xargs -r cat) | sha256sum)
stamp="$mod/vendor/.vendor-debian-inputs"
if [ -f "$mod/vendor/modules.txt" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
module=$(awk '/^module / { print $2; exit }' "$mod/go.mod")
rm -rf "$mod/vendor"
mkdir -p "$work/src/$(dirname "$module")"
ln -s "$mod" "$work/src/$module"
while read -r path _; do
  [ -n "$path" ] || continue
  mkdir -p "$work/src/$(dirname "$path")"
  ln -s "$(source_of "$path")" "$work/src/$path"
done <<<"$replaces"
packages=$(cd "$work/src/$module" &&
  GO111MODULE=off GOFLAGS= GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" \
  go list -deps -test -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... |
  awk -v m="$module" '{ p = $1; sub(/^.*\/vendor\//, "", p) }
    p != m && p != m ".test" && p != m "_test" && index(p, m "/") != 1 { print p }' |
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

# modules.txt as go mod vendor writes it: each module with its replacement,
# its go version and its packages, then the replacements of every version.
mkdir -p "$mod/vendor"
{
  while read -r path version; do
    r=$(replacement "$path")
    if [ -n "$r" ]; then echo "# $path $version => $r"; else echo "# $path $version"; fi
    goversion=$(awk '/^go / { print $2; exit }' "$(source_of "$path")/go.mod" 2>/dev/null || true)
    if [ -n "$goversion" ]; then echo "## explicit; go $goversion"; else echo "## explicit"; fi
    awk -v m="$path" '$1 == m { print $2 }' <<<"$assigned"
  done <<<"$requires"
  while read -r path r; do
    [ -n "$path" ] && echo "# $path => $r"
  done <<<"$replaces"
} >"$mod/vendor/modules.txt"

# One symlink per module root; a module inside another's directory (as
# go.opentelemetry.io/otel/trace in go.opentelemetry.io/otel) comes with it.
linked=()
while read -r path _; do
  src=$(source_of "$path")
  if [ -z "$(replacement "$path")" ]; then
    for l in "${linked[@]:-}"; do
      [ -n "$l" ] && case "$path" in "$l"/*) continue 2 ;; esac
    done
  fi
  [ -d "$src" ] || { echo "vendor-debian.sh: $src (module $path) is missing" >&2; exit 1; }
  mkdir -p "$mod/vendor/$(dirname "$path")"
  ln -s "$src" "$mod/vendor/$path"
  linked+=("$path")
done <<<"$requires"
echo "$inputs" >"$stamp"
