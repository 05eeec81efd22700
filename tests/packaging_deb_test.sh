#!/usr/bin/env bash
# `cpack -G DEB` of a built tree (into a temporary directory, never the build
# dir), then the .deb's contents with dpkg-deb: exactly msgqd, msgq, the
# systemd unit and the example flagfile (a conffile), no library or headers;
# Depends from dpkg-shlibdeps names gRPC, protobuf, Abseil and Connector/C;
# the packaged msgqd runs and accepts the packaged flagfile.
#   tests/packaging_deb_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d /tmp/msgq-deb-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" \
  >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }
debs=("$tmp"/out/msgq_*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || fail "no single .deb: ${debs[*]}"
deb=${debs[0]}
case "$(basename "$deb")" in
  msgq_0.1.0_"$(dpkg --print-architecture)".deb) ;;
  *) fail "unexpected file name $(basename "$deb")" ;;
esac

# The files (directories aside), exactly.
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $1, $6}' | sort)
expected=$(printf '%s\n' \
  "-rw-r--r-- ./etc/msgq/msgqd.flags" \
  "-rw-r--r-- ./lib/systemd/system/msgqd.service" \
  "-rwxr-xr-x ./usr/bin/msgq" \
  "-rwxr-xr-x ./usr/bin/msgqd" | sort)
[ "$files" = "$expected" ] || fail "contents:
$files
expected:
$expected"

[ "$(dpkg-deb -f "$deb" Package)" = msgq ] || fail "Package"
[ "$(dpkg-deb -f "$deb" Version)" = 0.1.0 ] || fail "Version"
[ "$(dpkg-deb -I "$deb" conffiles)" = /etc/msgq/msgqd.flags ] ||
  fail "conffiles: $(dpkg-deb -I "$deb" conffiles 2>&1)"
if command -v dpkg-shlibdeps >/dev/null; then
  depends=$(dpkg-deb -f "$deb" Depends)
  for lib in libgrpc++1.51 libprotobuf32 libabsl20220623 libmariadb3 libc6; do
    case ", $depends" in
      *", $lib "*) ;;
      *) fail "Depends lacks $lib: $depends" ;;
    esac
  done
fi

# The packaged binaries run; msgqd accepts the packaged flagfile.
dpkg-deb -x "$deb" "$tmp/root"
"$tmp/root/usr/bin/msgqd" --flagfile="$tmp/root/etc/msgq/msgqd.flags" \
  --only_check_args || fail "packaged msgqd rejects the packaged flagfile"
"$tmp/root/usr/bin/msgq" --help >/dev/null || fail "packaged msgq does not run"
cmp -s "$tmp/root/lib/systemd/system/msgqd.service" \
  "$src/packaging/msgqd.service" || fail "unit differs from packaging/"
echo "PASS: $(basename "$deb")"
