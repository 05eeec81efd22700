#!/usr/bin/env bash
# tools/msgq_bench/shards.sh BUILD_DIR N [msgq-bench flags...]
#
# The shard comparison behind `tools/bench --shards=N` (docs/scale.md): a
# drain of --messages (default 1,000,000) on one private MariaDB with one
# msgqd, then the same total split over N private MariaDBs with one msgqd
# each, all N drained at the same time (--start_barrier) on the same
# machine, so on the same total CPU. The relay is not run. Writes
# OUT/shards-1/ and OUT/shards-N/shard-I/ (each a msgq-bench out_dir) and
# prints the comparison (tools/msgq_bench/shards_summary.py). Exit status 0
# when every drain delivered and acked every message.
set -euo pipefail
build=$1
n=$2
if ! [ "$n" -ge 1 ] 2>/dev/null; then
  echo "shards: N must be a positive number, not '$n'" >&2
  exit 2
fi
shift 2
bench="$build/tools/msgq-bench"
out=bench-out
messages=1000000
pass=()
for a in "$@"; do
  case "$a" in
    --out_dir=*) out=${a#--out_dir=} ;;
    --messages=*) messages=${a#--messages=} ;;
    --mode=* | --relay=* | --plot=* | --start_barrier=*) ;;
    *) pass+=("$a") ;;
  esac
done
mkdir -p "$out/shards-$n"
common=(--mode=drain --relay=false --plot=false)

echo "shards: one MariaDB and msgqd, $messages messages" >&2
rc=0
"$bench" "${common[@]}" --messages="$messages" --out_dir="$out/shards-1" \
  ${pass[@]+"${pass[@]}"} >"$out/shards-1.log" 2>&1 || rc=1

per=$((messages / n))
echo "shards: $n MariaDBs and msgqds, $per messages each, drained together" >&2
barrier="$out/shards-$n/barrier"
rm -f "$barrier".*
pids=()
# An interrupted comparison takes its shards' benches (and so their
# MariaDBs and msgqds) with it.
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
for i in $(seq 1 "$n"); do
  "$bench" "${common[@]}" --messages="$per" \
    --out_dir="$out/shards-$n/shard-$i" --start_barrier="$barrier" \
    ${pass[@]+"${pass[@]}"} >"$out/shards-$n/shard-$i.log" 2>&1 &
  pids+=($!)
done
# Every shard preloaded and subscribed-ready: let them all drain.
while [ "$(find "$out/shards-$n" -maxdepth 1 -name 'barrier.ready.*' | wc -l)" -lt "$n" ]; do
  for p in "${pids[@]}"; do
    if ! kill -0 "$p" 2>/dev/null; then
      echo "shards: a shard's bench ended before the start; see $out/shards-$n/" >&2
      touch "$barrier.go"
      break 2
    fi
  done
  sleep 0.05
done
touch "$barrier.go"
for p in "${pids[@]}"; do wait "$p" || rc=1; done
/usr/bin/python3 "$(dirname "$0")/shards_summary.py" "$out" "$n" || rc=1
exit $rc
