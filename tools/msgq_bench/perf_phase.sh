#!/usr/bin/env bash
# perf_phase.sh: `perf record -g` of one process over one bench phase, and the
# text summary of the profile. msgq-bench --perf runs it around each drain
# phase for msgqd and mariadbd; it works on any process by hand too.
#
#   perf_phase.sh start PID PREFIX   # PREFIX.perf.data (perf's output in
#                                    # PREFIX.perf.log); returns once attached
#   perf_phase.sh stop PREFIX        # stops it, writes PREFIX.perf.txt
#   perf_phase.sh report DATA > TXT  # the summary of any perf.data
#
# The summary: the top threads, shared objects and symbols by self time.
# Exit status: 0, or 1 when perf cannot start (the message says why).
set -euo pipefail

summary() {
  local trim=(grep -v -e '^$' -e '^# ' -e '^#$')
  local report=(perf report -i "$1" --no-children -g none --stdio)
  echo '## by thread'
  "${report[@]}" --sort pid 2>/dev/null | "${trim[@]}" | cut -c1-160 | head -25
  echo '## by shared object'
  "${report[@]}" --sort dso 2>/dev/null | "${trim[@]}" | cut -c1-160 | head -25
  echo '## by symbol'
  "${report[@]}" --sort dso,symbol 2>/dev/null | "${trim[@]}" | cut -c1-160 |
    head -80
}

case "${1:-}" in
  start)
    pid=$2 prefix=$3
    perf record -g -F 499 -p "$pid" -o "$prefix.perf.data" \
      </dev/null >"$prefix.perf.log" 2>&1 &
    echo $! >"$prefix.perf.pid"
    sleep 0.3  # let it attach
    if ! kill -0 "$(cat "$prefix.perf.pid")" 2>/dev/null; then
      echo "perf exited at once: $(cat "$prefix.perf.log")" >&2
      rm -f "$prefix.perf.pid"
      exit 1
    fi
    ;;
  stop)
    prefix=$2
    perf_pid=$(cat "$prefix.perf.pid")
    rm -f "$prefix.perf.pid"
    kill -INT "$perf_pid" 2>/dev/null || true
    for _ in $(seq 600); do  # up to 60 s to write perf.data
      kill -0 "$perf_pid" 2>/dev/null || break
      sleep 0.1
    done
    summary "$prefix.perf.data" >"$prefix.perf.txt" || true
    ;;
  report) summary "$2" ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
